/**
 * Where a webhook may go: http(s) only, and not into the worker's own network
 * unless its config allows it. Every textual form of an address is read into
 * its bytes (ipaddr.js) before it is judged (IPv4 in decimal, hex, octal or short form;
 * IPv6 with an IPv4 embedded by mapping, NAT64, 6to4 or Teredo), and the
 * connection is pinned to the address that was checked: the host is resolved
 * once, by the check, and the socket connects to what it returned.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress, LookupOneOptions, LookupAllOptions } from "node:dns";
import { isIP } from "node:net";
import { isPrivateAddress, parseIp } from "../../node/addresses.js";
import { parseUrl } from "../../shared/urls.js";

export { checkWebhookField, type WebhookTarget } from "../../shared/webhook-field.js";
export { isPrivateAddress } from "../../node/addresses.js";

/** Resolves a host name to its addresses (default: the system resolver, as `dns.lookup(name, { all: true })`). */
export type WebhookResolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: WebhookResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** Host names that always mean this machine, whatever a resolver says. */
function localName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost") || name === "localhost.localdomain";
}

const refusal = (host: string, address: string) =>
  `webhook URL ${host} resolves to the private or loopback address ${address}; the worker's config does not allow that (webhooks.allowPrivateHosts)`;

/** A URL's host without IPv6 brackets. */
const bareHost = (url: URL) => url.hostname.replace(/^\[|\]$/g, "");

/**
 * The addresses a webhook to `url` may connect to, each checked; a string
 * saying why not when one of them is inside and private hosts are not allowed.
 * Throws when the name does not resolve (that may pass: the caller retries).
 */
export async function webhookAddresses(
  url: URL,
  allowPrivate: boolean,
  resolve: WebhookResolver = systemResolver,
): Promise<LookupAddress[] | string> {
  const host = bareHost(url);
  const literal = parseIp(host);
  // A host that reads as an address is one, whatever a resolver would make of it.
  if (literal || isIP(host)) {
    if (!allowPrivate && isPrivateAddress(host)) return refusal(url.host, host);
    return [{ address: host, family: literal?.length === 4 ? 4 : 6 }];
  }
  if (!allowPrivate && localName(host)) return refusal(url.host, host);
  const addresses = await resolve(host);
  if (!addresses.length) throw new Error(`webhook host ${url.host} resolved to no address`);
  // Every answer is judged, not only the first: the socket may try any of them.
  const inside = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
  return inside ? refusal(url.host, inside.address) : addresses;
}

/**
 * Checks the URL where the worker is: its scheme, and that none of the host's
 * addresses is private unless allowed. The delivery itself connects only to
 * addresses checked this way (see `pinnedLookup`).
 */
export async function checkWebhookUrl(
  url: string,
  allowPrivate: boolean,
  resolve?: WebhookResolver,
): Promise<string | undefined> {
  const parsed = parseUrl(url);
  if (!parsed) return `webhook URL is not a URL: ${url}`;
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return `webhook URL must be http or https, got ${parsed.protocol}`;
  try {
    const checked = await webhookAddresses(parsed, allowPrivate, resolve);
    return typeof checked === "string" ? checked : undefined;
  } catch (err) {
    return `webhook URL ${parsed.host} does not resolve: ${err instanceof Error ? err.message : String(err)}`;
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for `http.request`/`net.connect` that answers only with the
 * addresses `checked` holds (the ones judged before connecting), so what the
 * socket connects to is what was checked: no second resolution, no rebinding.
 */
export function pinnedLookup(checked: LookupAddress[]) {
  return (hostname: string, options: LookupOneOptions | LookupAllOptions | number, callback: LookupCallback) => {
    const family = typeof options === "number" ? options : (options.family ?? 0);
    const all = typeof options === "object" && options.all === true;
    const usable = checked.filter((a) => !family || family === "IPv4" || family === "IPv6" || a.family === family);
    if (!usable.length) {
      const err: NodeJS.ErrnoException = new Error(`no checked address of ${hostname} for family ${family}`);
      err.code = "ENOTFOUND";
      return callback(err, all ? [] : "", undefined);
    }
    if (all) callback(null, usable);
    else callback(null, usable[0].address, usable[0].family);
  };
}
