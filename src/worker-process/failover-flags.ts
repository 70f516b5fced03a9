/** The worker process's fast failover (off unless asked for): the extension from its flags, environment and config. */
import type { Duration } from "@temporalio/common";
import type { AgentWorkerExtension } from "../extension.js";
import { fastFailover, presenceTimeoutMs, type FastFailoverOptions, type LinkOptions } from "../failover/index.js";

/** Fast failover's links from JAI_FAILOVER_LINKS ("off", "port" or "host:port") and JAI_FAILOVER_ADVERTISE. */
export function failoverLinks(
  value: string | undefined,
  advertise: string | undefined,
): false | LinkOptions | undefined {
  if ((value === undefined || value === "") && !advertise) return undefined;
  if (value === "off") return false;
  const at = value?.lastIndexOf(":") ?? -1;
  // "[::1]:7000" names an IPv6 host.
  const host = value && at >= 0 ? value.slice(0, at).replace(/^\[(.*)\]$/, "$1") : undefined;
  const port = value ? Number(at >= 0 ? value.slice(at + 1) : value) : 0;
  if (host === "" || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`JAI_FAILOVER_LINKS must be "off", a port or host:port, got "${value}"`);
  return { ...(host ? { host } : {}), port, ...(advertise ? { advertise } : {}) };
}

export interface FailoverSettings {
  /** --fast-failover / JAI_FAST_FAILOVER: "on", "off" or a presence timeout. */
  enabled?: string;
  /** --failover-links / JAI_FAILOVER_LINKS. */
  links?: string;
  /** JAI_FAILOVER_ADVERTISE. */
  advertise?: string;
  /** JAI_FAILOVER_SECRET. */
  secret?: string;
}

/** The fast-failover extension when the flag, the environment or else the config module turns it on; else none. */
export function failoverExtensions(
  settings: FailoverSettings,
  configured: boolean | FastFailoverOptions | undefined,
): AgentWorkerExtension[] {
  const value = settings.enabled;
  const fromConfig = typeof configured === "object" ? configured : {};
  let options: FastFailoverOptions;
  if (value === undefined || value === "") {
    if (!configured) return [];
    options = fromConfig;
  } else if (value === "off") return [];
  else if (value === "on") options = fromConfig;
  else {
    try {
      presenceTimeoutMs(value as Duration);
    } catch {
      throw new Error(`JAI_FAST_FAILOVER must be "on", "off" or a duration above 0 such as "2s", got "${value}"`);
    }
    options = { ...fromConfig, presenceTimeout: value as Duration };
  }
  const links = failoverLinks(settings.links, settings.advertise);
  return [
    fastFailover({
      ...options,
      ...(links !== undefined ? { links } : {}),
      ...(settings.secret ? { secret: settings.secret } : {}),
    }),
  ];
}
