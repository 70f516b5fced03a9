/** Where the console links a run's history: a configured Temporal UI, else the `npm run temporal` dev server's. */
import { readServerState } from "../node/server-state.js";

/** "host:port" (IPv6 in brackets) as host and port; undefined when it has no port. */
function hostAndPort(address: string): { host: string; port: string } | undefined {
  const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(address.trim());
  return m ? { host: m[1].toLowerCase(), port: m[2] } : undefined;
}

/** Names and addresses of this machine's loopback interface (what `localhost` resolves to). */
const isLoopback = (host: string) => host === "localhost" || host === "::1" || /^127\.\d+\.\d+\.\d+$/.test(host);

/**
 * Whether two addresses name the same server: the same port and host, or the same port on loopback however it
 * is written (`localhost:7233`, `127.0.0.1:7233`, `[::1]:7233`: what `npm run temporal` writes and what
 * TEMPORAL_ADDRESS's default says differ only so).
 */
export function sameServerAddress(a: string, b: string): boolean {
  const x = hostAndPort(a);
  const y = hostAndPort(b);
  if (!x || !y) return a.trim() === b.trim();
  return x.port === y.port && (x.host === y.host || (isLoopback(x.host) && isLoopback(y.host)));
}

/**
 * The Web UI of the dev server `npm run temporal` keeps running (its state file, `.jai/server.json` in the
 * working folder), when `address` is that server's: so `npm run serve` next to it links runs with no setting.
 */
export function devServerUiUrl(address: string | undefined, cwd = process.cwd()): string | undefined {
  if (!address) return undefined;
  const state = readServerState(cwd);
  return state && sameServerAddress(state.address, address) && typeof state.uiUrl === "string"
    ? state.uiUrl
    : undefined;
}
