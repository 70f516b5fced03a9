/**
 * Where a webhook may go: http(s) only, and not into the worker's own network
 * unless its config allows it. Every textual form of an address is read into
 * its bytes before it is judged (IPv4 in decimal, hex, octal or short form;
 * IPv6 with an IPv4 embedded by mapping, NAT64, 6to4 or Teredo), and the
 * connection is pinned to the address that was checked: the host is resolved
 * once, by the check, and the socket connects to what it returned.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import type { LookupAddress, LookupOneOptions, LookupAllOptions } from "node:dns";
import { isIP } from "node:net";

export { checkWebhookField, type WebhookTarget } from "./field.js";

/** Resolves a host name to its addresses (default: the system resolver, as `dns.lookup(name, { all: true })`). */
export type WebhookResolver = (hostname: string) => Promise<LookupAddress[]>;

const systemResolver: WebhookResolver = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

/** One IPv4 part as inet_aton reads it: decimal, `0x` hex, or octal with a leading 0. */
function ipv4Part(part: string): number | undefined {
  if (/^0x[0-9a-f]*$/i.test(part)) return part.length === 2 ? 0 : parseInt(part.slice(2), 16);
  if (/^0[0-7]+$/.test(part)) return parseInt(part.slice(1), 8);
  if (/^(0|[1-9][0-9]*)$/.test(part)) return Number(part);
  return undefined;
}

/**
 * The four bytes of an IPv4 address in any form inet_aton and URL parsers
 * accept (`2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1`, a trailing dot), or
 * undefined when `text` is not one.
 */
export function parseIPv4(text: string): number[] | undefined {
  const parts = text.replace(/\.$/, "").split(".");
  if (parts.length < 1 || parts.length > 4) return undefined;
  const values = parts.map(ipv4Part);
  if (values.some((v) => v === undefined || !Number.isFinite(v))) return undefined;
  const nums = values as number[];
  const last = nums[nums.length - 1];
  if (nums.slice(0, -1).some((v) => v > 255) || last >= 256 ** (5 - nums.length)) return undefined;
  const bytes = nums.slice(0, -1);
  for (let i = 4 - nums.length; i >= 0; i--) bytes.push(Math.floor(last / 256 ** i) % 256);
  return bytes;
}

/** The sixteen bytes of an IPv6 address (brackets and a zone id allowed; an IPv4 tail in any form), or undefined. */
export function parseIPv6(text: string): number[] | undefined {
  let s = text.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  if (!s.includes(":")) return undefined;
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = v4;
    s = s.slice(0, lastColon + 1);
    if (!s.endsWith("::")) s = s.slice(0, -1);
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  if ([...head, ...rest].some((w) => !/^[0-9a-f]{1,4}$/i.test(w))) return undefined;
  const wanted = 8 - tail.length / 2;
  const count = head.length + rest.length;
  if (halves.length === 1 ? count !== wanted : count > wanted - 1) return undefined;
  const zeros = Array<string>(wanted - count).fill("0");
  const words = [...head, ...zeros, ...rest].map((w) => parseInt(w, 16));
  return [...words.flatMap((w) => [w >> 8, w & 255]), ...tail];
}

/** The bytes of an IP address in any form (4 or 16 of them), or undefined when `text` is not an address. */
export function parseIp(text: string): number[] | undefined {
  return parseIPv6(text) ?? parseIPv4(text.replace(/^\[|\]$/g, ""));
}

/** Not a public unicast IPv4 address: this network, private, shared (CGNAT), loopback, link-local, reserved, multicast, broadcast. */
function ipv4Inside([a, b, c]: number[]): boolean {
  return (
    a === 0 || // "this network"; 0.0.0.0 reaches the host itself
    a === 10 ||
    a === 127 ||
    (a === 100 && b >= 64 && b <= 127) || // shared address space (CGNAT)
    (a === 169 && b === 254) || // link-local, cloud metadata 169.254.169.254
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 192 && b === 0 && (c === 0 || c === 2)) || // IETF protocol assignments, documentation
    (a === 198 && (b === 18 || b === 19)) || // benchmarking
    (a === 198 && b === 51 && c === 100) ||
    (a === 203 && b === 0 && c === 113) ||
    a >= 224 // multicast, reserved, broadcast
  );
}

function ipv6Inside(x: number[]): boolean {
  const zero = (from: number, to: number) => x.slice(from, to).every((v) => v === 0);
  const v4 = x.slice(12);
  // ::/96 (unspecified, loopback ::1, IPv4-compatible), ::ffff:0:0/96 (IPv4-mapped), ::ffff:0:0:0/96 (IPv4-translated).
  if (zero(0, 10) && ((x[10] === 0 && x[11] === 0) || (x[10] === 255 && x[11] === 255))) return ipv4Inside(v4);
  if (zero(0, 8) && x[8] === 255 && x[9] === 255 && x[10] === 0 && x[11] === 0) return ipv4Inside(v4);
  // NAT64: 64:ff9b::/96 carries an IPv4 address; 64:ff9b:1::/48 is for local use.
  if (x[0] === 0 && x[1] === 0x64 && x[2] === 0xff && x[3] === 0x9b) {
    if (zero(4, 12)) return ipv4Inside(v4);
    if (x[4] === 0 && x[5] === 1) return true;
  }
  // 6to4 (2002::/16) carries an IPv4 address in bytes 2-5; Teredo (2001::/32) its client's, inverted, in the last four.
  if (x[0] === 0x20 && x[1] === 0x02) return ipv4Inside(x.slice(2, 6));
  if (x[0] === 0x20 && x[1] === 0x01 && x[2] === 0 && x[3] === 0) return ipv4Inside(v4.map((v) => v ^ 255));
  return (
    (x[0] & 0xfe) === 0xfc || // unique-local fc00::/7 (fd00:ec2::254, the EC2 metadata address, among them)
    (x[0] === 0xfe && (x[1] & 0xc0) === 0x80) || // link-local fe80::/10
    (x[0] === 0xfe && (x[1] & 0xc0) === 0xc0) || // site-local fec0::/10 (deprecated)
    x[0] === 0xff || // multicast
    (x[0] === 1 && x[1] === 0 && zero(2, 8)) || // discard-only 100::/64
    (x[0] === 0x20 && x[1] === 0x01 && x[2] === 0x0d && x[3] === 0xb8) // documentation 2001:db8::/32
  );
}

/**
 * True when `ip` (any textual form) is loopback, private, shared, link-local,
 * unique-local, multicast, unspecified or otherwise not a public unicast
 * address, IPv4 embedded in IPv6 included. Text that is not an address counts
 * as inside: the caller refuses what it cannot judge.
 */
export function isPrivateAddress(ip: string): boolean {
  const bytes = parseIp(ip);
  if (!bytes) return true;
  return bytes.length === 4 ? ipv4Inside(bytes) : ipv6Inside(bytes);
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
