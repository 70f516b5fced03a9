/**
 * Every address judgement in one place, on ipaddr.js (it reads every textual form and names the ranges): what a
 * webhook may reach (worker/webhooks/target.ts), which `Host` names and peers the HTTP app serves (http/app.ts:
 * the run API, the codec server, health and metrics).
 */
import { networkInterfaces } from "node:os";
import ipaddr from "ipaddr.js";

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

/** A loopback address or name: "localhost", 127.0.0.0/8, ::1 (IPv4-mapped and bracketed forms too). */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost") return true;
  // Only the plain dotted or colon forms a Host header or a socket gives: "127.1" is a name here, not an address.
  if (!/^[0-9.]+$|:/.test(h) || (!h.includes(":") && !ipaddr.IPv4.isValidFourPartDecimal(h))) return false;
  const address = parseAddress(h);
  if (!address) return false;
  if (address.range() === "loopback") return true;
  return address.kind() === "ipv6" && embeddedIPv4(address as ipaddr.IPv6)?.range() === "loopback";
}

/** The host of a `Host` header ("name:port", "[v6]:port" or a bare name). */
export const hostOfHeader = (header: string) =>
  header.startsWith("[") ? header.slice(0, header.indexOf("]") + 1) : header.replace(/:\d*$/, "");

/** "host:port" as a Host header names it (IPv6 in brackets), lowercased. */
export const hostPort = (host: string, port: number) =>
  `${host.includes(":") ? `[${host}]` : host}:${port}`.toLowerCase();

const LOOPBACK_NAMES = ["127.0.0.1", "::1", "localhost"];
const WILDCARD = new Set(["0.0.0.0", "::", ""]);

/**
 * The `Host` header values a server bound to `bound`:`port` answers to: the loopback names, the bound address
 * (every interface's address when bound to all), and `allowed` ("name": any port; "name:port"). Undefined: any
 * (`allowed` holds "*").
 */
export function servedHosts(bound: string, port: number, allowed: readonly string[]): Set<string> | undefined {
  if (allowed.includes("*")) return undefined;
  const names = new Set<string>();
  const add = (host: string) => {
    names.add(hostPort(host, port));
    if (port === 80) names.add((host.includes(":") ? `[${host}]` : host).toLowerCase()); // browsers omit :80
  };
  for (const name of LOOPBACK_NAMES) add(name);
  if (WILDCARD.has(bound)) {
    for (const addresses of Object.values(networkInterfaces()))
      for (const a of addresses ?? []) add(a.address.replace(/%.*$/, ""));
  }
  add(bound);
  for (const entry of allowed) {
    const name = entry.trim().toLowerCase();
    if (!name) continue;
    // "name:port" / "[v6]:port" as given; a bare name with any port (a proxy in front may use 80/443).
    if (/^\[.*\]:\d+$|^[^:]+:\d+$/.test(name)) names.add(name);
    else {
      names.add(name.includes(":") && !name.startsWith("[") ? `[${name}]` : name);
      names.add(hostPort(name.replace(/^\[(.*)\]$/, "$1"), port));
    }
  }
  return names;
}
