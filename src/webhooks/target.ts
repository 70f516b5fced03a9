/** Where a webhook may go: http(s) only, and not into the worker's own network unless its config allows it. */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";

export { checkWebhookField, type WebhookTarget } from "./field.js";

function ipv4Private(ip: string): boolean {
  const [a, b] = ip.split(".").map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    a >= 224
  );
}

/** Loopback, private, link-local, unique-local, multicast or unspecified. */
export function isPrivateAddress(ip: string): boolean {
  if (isIP(ip) === 4) return ipv4Private(ip);
  const v6 = ip.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(v6);
  if (mapped) return ipv4Private(mapped[1]);
  return v6 === "::" || v6 === "::1" || /^f[cd]/.test(v6) || /^fe[89ab]/.test(v6) || v6.startsWith("ff");
}

/**
 * Checks the URL where the worker is: its scheme, and that none of the host's
 * addresses is private unless allowed (names are resolved now; a host that
 * re-resolves differently at connect time is not caught).
 */
export async function checkWebhookUrl(url: string, allowPrivate: boolean): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `webhook URL is not a URL: ${url}`;
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return `webhook URL must be http or https, got ${parsed.protocol}`;
  if (allowPrivate) return undefined;
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  const addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  const inside = addresses.find(isPrivateAddress);
  return inside
    ? `webhook URL ${parsed.host} resolves to the private or loopback address ${inside}; the worker's config does not allow that (webhooks.allowPrivateHosts)`
    : undefined;
}
