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
import ipaddr from "ipaddr.js";

export { checkWebhookField, type WebhookTarget } from "../../shared/webhook-field.js";

/** Resolves a host name to its addresses (default: the system resolver, as `dns.lookup(name, { all: true })`). */
export type WebhookResolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: WebhookResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/**
 * An IP address in any form inet_aton, URL parsers and resolvers accept, read by `ipaddr.js` (IPv4 in
 * decimal, hex, octal or short form; IPv6 with brackets, a zone id, or an IPv4 tail in any of those forms; a
 * trailing dot), or undefined when `text` is not one.
 */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  const s = text.replace(/^\[|\]$/g, "");
  if (!s.includes(":")) {
    const v4 = s.replace(/\.$/, "");
    return ipaddr.IPv4.isValid(v4) ? ipaddr.IPv4.parse(v4) : undefined;
  }
  let v6 = s.replace(/%.*$/, "");
  const lastColon = v6.lastIndexOf(":");
  const tail = v6.slice(lastColon + 1);
  // An IPv4 tail in a short or odd form (`::ffff:127.1`): its four-part form, which ipaddr.js's IPv6 reads.
  if (tail.includes(".")) {
    if (!ipaddr.IPv4.isValid(tail)) return undefined;
    v6 = v6.slice(0, lastColon + 1) + ipaddr.IPv4.parse(tail).toString();
  }
  return ipaddr.IPv6.isValid(v6) ? ipaddr.IPv6.parse(v6) : undefined;
}

/** The bytes of an IP address in any form (4 or 16 of them), or undefined when `text` is not an address. */
export function parseIp(text: string): number[] | undefined {
  return parseAddress(text)?.toByteArray();
}

/** The IPv4 address an IPv6 one carries (mapped, compatible, translated, NAT64, 6to4, Teredo), if it carries one. */
function embeddedIPv4(v6: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const x = v6.toByteArray();
  const zero = (from: number, to: number) => x.slice(from, to).every((v) => v === 0);
  const v4 = (bytes: number[]) => new ipaddr.IPv4(bytes);
  // ::/96 (IPv4-compatible), ::ffff:0:0/96 (mapped), ::ffff:0:0:0/96 (translated), 64:ff9b::/96 (NAT64).
  if (zero(0, 10) && ((x[10] === 0 && x[11] === 0) || (x[10] === 255 && x[11] === 255))) return v4(x.slice(12));
  if (zero(0, 8) && x[8] === 255 && x[9] === 255 && zero(10, 12)) return v4(x.slice(12));
  if (x[0] === 0 && x[1] === 0x64 && x[2] === 0xff && x[3] === 0x9b && zero(4, 12)) return v4(x.slice(12));
  const range = v6.range();
  if (range === "6to4") return v4(x.slice(2, 6));
  if (range === "teredo") return v4(x.slice(12).map((v) => v ^ 255));
  return undefined;
}

/**
 * True when `ip` (any textual form) is loopback, private, shared, link-local,
 * unique-local, multicast, unspecified or otherwise not a public unicast
 * address (ipaddr.js names the ranges), IPv4 embedded in IPv6 included. Text
 * that is not an address counts as inside: the caller refuses what it cannot judge.
 */
export function isPrivateAddress(ip: string): boolean {
  const address = parseAddress(ip);
  if (!address) return true;
  const judged = address.kind() === "ipv6" ? (embeddedIPv4(address as ipaddr.IPv6) ?? address) : address;
  return judged.range() !== "unicast";
}

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
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `webhook URL is not a URL: ${url}`;
  }
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
