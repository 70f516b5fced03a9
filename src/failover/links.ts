/**
 * Links: a direct TCP connection from every fast-failover worker to every other one of its fleet.
 *
 * A worker that is SIGKILLed (or crashes) has its sockets closed by its kernel at once, so every peer linked to it
 * knows within milliseconds; its presence heartbeats take a presence timeout and then a ping to say the same (2-4 s
 * after the kill on a loaded 2-core machine, and that wait is what its runs' replays then queue behind). A peer
 * whose link closed checks the address once more: nothing listening there (connection refused), or another worker
 * of the fleet answering, means the worker is gone, and it is failed over at once. Anything else (a network blip, a
 * host that does not answer, something that does not prove the fleet's secret) only makes the presence ping the
 * worker now instead of waiting for its heartbeats to stop: the ping still decides.
 *
 * Every connection starts with a challenge-response on the fleet's shared secret (`fastFailover.secret`), both
 * ways, before anything is said: the listener sends a nonce; the connecting peer answers with its own nonce and an
 * HMAC of both; only then does the listener name its worker, with an HMAC of both nonces and the name (so the
 * connecting peer knows it reached a worker of its fleet). A peer that does not prove the secret learns nothing
 * and is dropped after `HANDSHAKE_TIMEOUT_MS`. Without a secret the same exchange runs on a well-known key, which
 * proves nothing: links then listen on loopback only and link only to loopback addresses (workers of one host).
 * Connections are capped (`MAX_ACCEPTED` linked, `MAX_HANDSHAKING` unproven: the oldest unproven one is dropped
 * for a newer one), lines are bounded (`MAX_LINE`), and anything malformed closes the socket.
 *
 * After that a link carries nothing but a beat from the connecting side every `BEAT_EVERY_MS` (the listener drops
 * a link silent for `IDLE_MS`) and a "bye" from the listener when it closes on purpose (a graceful shutdown, after
 * the worker's drain), so a worker that leaves is never failed over. A paused worker (SIGSTOP) keeps its links:
 * its heartbeats tell.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import net from "node:net";
import os from "node:os";

/** Where a worker's links listener is reached. */
export interface LinkAddress {
  host: string;
  port: number;
}

/** A peer as its presence workflow shows it (the memo). */
export interface LinkPeer {
  /** The peer's own queue: what names it. */
  workerQueue: string;
  /** Its links listener. */
  address: LinkAddress;
  /** Its running presence workflow: where news of its death is sent. */
  presenceWorkflowId: string;
  /** The identities its pollers give the server (its presence's memo): whose calls are failed once it is gone. */
  identities?: string[];
}

/**
 * What a closed link showed once it was checked again: "refused" (nothing listens at the peer's address) and
 * "replaced" (another worker of the fleet does) mean the peer is gone; "closed" (no answer in time, an answer that
 * does not prove the secret, or another error) may be a network's doing.
 */
export type LinkEvidence = "refused" | "replaced" | "closed";

/** Options of a worker's links (`fastFailover.links`). */
export interface LinkOptions {
  /**
   * Interface the listener binds. Default: all ("0.0.0.0") with a `fastFailover.secret`, else loopback
   * ("127.0.0.1"); without a secret only a loopback interface is allowed.
   */
  host?: string;
  /** Port of the listener. Default: 0, any free one (peers learn it from the worker's presence). */
  port?: number;
  /**
   * Host peers connect to. Default: `host` when it names one interface, else this machine's first non-internal
   * IPv4 address (a container's own address), else 127.0.0.1.
   */
  advertise?: string;
}

/** The shortest shared secret taken (`fastFailover.secret`, JAI_FAILOVER_SECRET). */
export const MIN_SECRET_LENGTH = 16;

/**
 * HMAC-SHA256 (hex) of `parts` under `secret`, for `purpose` (each purpose its own: a MAC made for one is never
 * taken for another). Without a secret, under a well-known key: it proves nothing.
 */
export function macOf(secret: string | undefined, purpose: string, parts: unknown[]): string {
  return createHmac("sha256", secret ?? NO_SECRET)
    .update(JSON.stringify([purpose, ...parts]))
    .digest("hex");
}

/** Whether `given` is the MAC `expected`, compared in constant time. */
export function macMatches(expected: string, given: unknown): boolean {
  if (typeof given !== "string" || given.length !== expected.length) return false;
  return timingSafeEqual(Buffer.from(expected, "latin1"), Buffer.from(given, "latin1"));
}

/** A loopback host: what links without a secret listen on and connect to. */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^::ffff:/, "");
  return h === "localhost" || h === "::1" || (net.isIPv4(h) && h.startsWith("127."));
}

/** A host name or IP address a memo may name: no more, so nothing else reaches `net.connect`. */
function isHost(host: string): boolean {
  return (
    host.length > 0 &&
    host.length <= 253 &&
    (net.isIP(host) !== 0 || /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*$/.test(host))
  );
}

/** An address a peer can be reached at: a host and a TCP port (what `net.connect` would otherwise throw for). */
export function isLinkAddress(address: unknown): address is LinkAddress {
  const a = address as Partial<LinkAddress> | null | undefined;
  return typeof a?.host === "string" && isHost(a.host) && Number.isInteger(a.port) && a.port! > 0 && a.port! < 65536;
}

/** The well-known key of links without a secret. */
const NO_SECRET = "jai-link: no secret, loopback only";
/** What the listener says first: the protocol and its nonce. */
const GREETING = "jai-link/2 ";
const NONCE = /^[0-9a-f]{32}$/;
const BYE = "bye";
/** The longest line either side reads: a nonce and a MAC, or a MAC and a queue name. */
const MAX_LINE = 1200;
/** Links a listener keeps at most (its fleet's other workers), and connections that have not proven the secret yet. */
const MAX_ACCEPTED = 256;
const MAX_HANDSHAKING = 16;
/** At most this many peers are linked from one listing (a fleet's size; hand-started presences are not more). */
const MAX_PEERS = 256;
/** How often the connecting side of a link says it is there, and how long a silent link is kept by the listener. */
const BEAT_EVERY_MS = 30_000;
const IDLE_MS = 120_000;
/**
 * An address that answered but not as the peer (another worker, something that does not prove the secret, no
 * answer) is tried again no sooner than this, doubling up to `MAX_RETRY_AFTER_MS`.
 */
const RETRY_AFTER_MS = 3000;
const MAX_RETRY_AFTER_MS = 60_000;
/** How long a bye has to reach a peer before the socket is destroyed. */
const BYE_GRACE_MS = 1000;
/** Keepalive on links: a peer that vanished without a close (a host powered off) is noticed in tens of seconds. */
const KEEPALIVE_MS = 10_000;
/**
 * How long a peer has to prove the secret and name itself on first contact (a saturated worker's event loop can be
 * seconds late); the listener drops a connection that has not proven it by then.
 */
const HANDSHAKE_TIMEOUT_MS = 5000;
/**
 * A closed link is checked again for this long, every `RECHECK_EVERY_MS`, until the address says something clear:
 * a killed process closes its sockets one by one, so a connection can reach its listener just before that one
 * closes too, and be reset rather than refused.
 */
const RECHECK_MS = 2000;
const RECHECK_EVERY_MS = 50;

/** "same": the socket stays open, with what came after the peer's name (a bye may come with it). */
type Probe = { kind: "same"; socket: net.Socket; rest: string } | { kind: "other" } | { kind: LinkEvidence };

interface Link {
  peer: LinkPeer;
  socket: net.Socket;
  /** Closed by this side (the peer left the fleet's list), or the peer said bye: not news. */
  quiet: boolean;
}

/** The host peers are told to connect to, for a listener bound to `host`. */
export function advertisedHost(host: string, interfaces = os.networkInterfaces()): string {
  if (host !== "0.0.0.0" && host !== "::") return host;
  for (const addresses of Object.values(interfaces))
    for (const a of addresses ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  return "127.0.0.1";
}

/**
 * Connects to `address`, proves the secret and reads the peer's name, which it proves in turn: "same" (it is
 * `workerQueue`; the socket stays open), "other" (a different worker of the fleet answers there), or what the
 * failure says ("closed" also for an answer that is not the protocol or does not prove the secret).
 */
function probe(
  address: LinkAddress,
  workerQueue: string,
  secret: string | undefined,
  timeoutMs = HANDSHAKE_TIMEOUT_MS,
): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address.host, port: address.port });
    let heard = "";
    let theirs: string | undefined;
    const ours = randomBytes(16).toString("hex");
    const onData = (chunk: string) => {
      heard += chunk;
      for (let end = heard.indexOf("\n"); end >= 0; end = heard.indexOf("\n")) {
        const line = heard.slice(0, end);
        heard = heard.slice(end + 1);
        if (theirs === undefined) {
          // The greeting: the listener's nonce. Ours, and the proof, go back.
          const nonce = line.startsWith(GREETING) ? line.slice(GREETING.length) : "";
          if (!NONCE.test(nonce)) return done({ kind: "closed" });
          theirs = nonce;
          socket.write(`${ours} ${macOf(secret, "link-connect", [theirs, ours])}\n`);
          continue;
        }
        // Its name, and the proof it holds the secret too.
        const at = line.indexOf(" ");
        const queue = line.slice(at + 1);
        if (at < 0 || !macMatches(macOf(secret, "link-accept", [ours, theirs, queue]), line.slice(0, at)))
          return done({ kind: "closed" });
        return done(queue === workerQueue ? { kind: "same", socket, rest: heard } : { kind: "other" });
      }
      if (heard.length > MAX_LINE) done({ kind: "closed" });
    };
    const onError = (err: NodeJS.ErrnoException) => done({ kind: err.code === "ECONNREFUSED" ? "refused" : "closed" });
    const onClose = () => done({ kind: "closed" });
    const timer = setTimeout(onClose, timeoutMs);
    let settled = false;
    function done(result: Probe) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.off("data", onData).off("error", onError).off("close", onClose);
      if (result.kind !== "same") socket.on("error", () => {}).destroy();
      resolve(result);
    }
    socket.setEncoding("utf8");
    socket.on("data", onData).on("error", onError).on("close", onClose);
  });
}

/** One worker's links: its listener, and its connections to the fleet's other workers. */
export class PeerLinks {
  private server?: net.Server;
  /** Connections that proved the secret: the fleet's links to this worker. */
  private readonly accepted = new Set<net.Socket>();
  /** Connections that have not proven it yet, oldest first. */
  private readonly handshaking = new Set<net.Socket>();
  private readonly links = new Map<string, Link>();
  /** Peers being connected to, or checked again. */
  private readonly pending = new Set<string>();
  /** Peers reported gone: never linked again (a restarted worker has another queue). */
  private readonly lost = new Set<string>();
  /** Addresses that answered but not as the peer listed there: not tried again before `at` ("host:port"). */
  private readonly backoff = new Map<string, { at: number; waitMs: number }>();
  private closed = false;
  /** Where peers reach this worker, once it listens. */
  address?: LinkAddress;

  constructor(
    /** This worker's own queue: what it names itself by. */
    readonly workerQueue: string,
    private readonly onLost: (peer: LinkPeer, evidence: LinkEvidence) => void,
    private readonly options: LinkOptions = {},
    /** The fleet's shared secret (`fastFailover.secret`); none: loopback only. */
    private readonly secret?: string,
  ) {
    if (secret !== undefined && secret.length < MIN_SECRET_LENGTH)
      throw new RangeError(`fastFailover.secret must be at least ${MIN_SECRET_LENGTH} characters`);
    if (secret === undefined)
      for (const [name, host] of [
        ["host", options.host],
        ["advertise", options.advertise],
      ] as const)
        if (host !== undefined && !isLoopback(host))
          throw new TypeError(
            `fastFailover.links.${name} ${host} is not a loopback address: links beyond this host need fastFailover.secret (JAI_FAILOVER_SECRET)`,
          );
  }

  /** Starts the listener; resolves with the address peers are told. */
  async listen(): Promise<LinkAddress> {
    const host = this.options.host ?? (this.secret === undefined ? "127.0.0.1" : "0.0.0.0");
    const server = net.createServer((socket) => this.accept(socket));
    // A ceiling on the file handles the listener holds, whatever connects (the caps below drop the rest at once).
    server.maxConnections = MAX_ACCEPTED + MAX_HANDSHAKING + 16;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.options.port ?? 0, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", () => {});
    if (this.closed) {
      server.close();
      throw new Error("links closed while they started to listen");
    }
    this.server = server;
    const { port } = server.address() as net.AddressInfo;
    this.address = { host: this.options.advertise ?? advertisedHost(host), port };
    return this.address;
  }

  /**
   * A connection to the listener: it is told a nonce and nothing else until it proves the secret (within
   * `HANDSHAKE_TIMEOUT_MS`); then it is told this worker's name, and kept while it beats.
   */
  private accept(socket: net.Socket): void {
    socket.on("error", () => {});
    if (this.closed) return void socket.destroy();
    // The oldest unproven connection makes room: a flood of idle ones cannot keep a real peer out.
    const oldest = this.handshaking.size >= MAX_HANDSHAKING ? this.handshaking.values().next().value : undefined;
    if (oldest) {
      this.handshaking.delete(oldest);
      oldest.destroy();
    }
    this.handshaking.add(socket);
    const timer = setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS);
    timer.unref();
    socket.on("close", () => {
      clearTimeout(timer);
      this.handshaking.delete(socket);
      this.accepted.delete(socket);
    });
    socket.setNoDelay(true);
    socket.setEncoding("utf8");
    const ours = randomBytes(16).toString("hex");
    let heard = "";
    const onData = (chunk: string) => {
      heard += chunk;
      const end = heard.indexOf("\n");
      if (end < 0) {
        if (heard.length > MAX_LINE) socket.destroy();
        return;
      }
      socket.off("data", onData);
      const [theirs, proof, ...extra] = heard.slice(0, end).split(" ");
      // Nothing may follow the proof before the name is said (a peer of the fleet waits for it).
      if (
        extra.length > 0 ||
        end + 1 !== heard.length ||
        !NONCE.test(theirs ?? "") ||
        !macMatches(macOf(this.secret, "link-connect", [ours, theirs]), proof) ||
        this.closed ||
        this.accepted.size >= MAX_ACCEPTED
      )
        return void socket.destroy();
      clearTimeout(timer);
      this.handshaking.delete(socket);
      this.accepted.add(socket);
      socket.write(`${macOf(this.secret, "link-accept", [theirs, ours, this.workerQueue])} ${this.workerQueue}\n`);
      // From now on only beats come (nothing is kept of them); a link silent for `IDLE_MS` is dropped.
      socket.on("data", () => {});
      socket.setTimeout(IDLE_MS, () => socket.destroy());
    };
    socket.on("data", onData);
    socket.write(`${GREETING}${ours}\n`);
  }

  /**
   * The fleet as its presences show it now: links the new peers, drops the ones that left it. A peer whose memo
   * gives no address a socket can have (a hand-started presence, another version's), or, without a secret, an
   * address off this host, is left to its heartbeats: every worker lists the same memo, and a throw there would
   * end them all. (With a secret, the presences' memos are proven before they get here: see presence.ts.)
   */
  update(peers: LinkPeer[]): void {
    if (this.closed) return;
    const listed = new Map(
      peers
        .filter(
          (p) =>
            p.workerQueue !== this.workerQueue &&
            isLinkAddress(p.address) &&
            (this.secret !== undefined || isLoopback(p.address.host)),
        )
        .slice(0, MAX_PEERS)
        .map((p) => [p.workerQueue, p]),
    );
    for (const [queue, link] of this.links) {
      const now = listed.get(queue);
      if (now)
        link.peer = now; // its presence may have been restarted: news goes to the running one
      else this.drop(queue);
    }
    const addresses = new Set([...listed.values()].map((p) => addressKey(p.address)));
    for (const key of this.backoff.keys()) if (!addresses.has(key)) this.backoff.delete(key);
    const now = Date.now();
    for (const peer of listed.values())
      if (
        !this.links.has(peer.workerQueue) &&
        !this.pending.has(peer.workerQueue) &&
        !this.lost.has(peer.workerQueue) &&
        (this.backoff.get(addressKey(peer.address))?.at ?? 0) <= now
      )
        this.link(peer).catch((err: unknown) => console.warn(`jai: linking ${peer.workerQueue}: ${String(err)}`));
  }

  /** How many peers hold a link to this worker now (connections its listener accepted and keeps). */
  linkedBy(): number {
    return this.accepted.size;
  }

  /** Connections the listener holds now: linked, and not yet proven (each kind capped). */
  held(): { linked: number; handshaking: number } {
    return { linked: this.accepted.size, handshaking: this.handshaking.size };
  }

  /** The peers linked now (their queues). */
  linked(): string[] {
    return [...this.links.keys()];
  }

  /**
   * Says bye on every accepted link and closes everything: peers do not take this worker for dead. Does not wait
   * for peers to close their ends (a paused one never would): what is left is destroyed a moment later.
   */
  close(): Promise<void> {
    this.closed = true;
    for (const queue of [...this.links.keys()]) this.drop(queue);
    this.server?.close();
    for (const socket of this.handshaking) socket.destroy();
    for (const socket of this.accepted) socket.end(`${BYE}\n`);
    const sockets = [...this.accepted];
    setTimeout(() => sockets.forEach((s) => s.destroy()), BYE_GRACE_MS).unref();
    return Promise.resolve();
  }

  private drop(queue: string): void {
    const link = this.links.get(queue);
    if (!link) return;
    link.quiet = true;
    this.links.delete(queue);
    link.socket.destroy();
  }

  /**
   * First contact: a peer that cannot be reached is tried again at the next update (its heartbeats still tell); an
   * address that answered but not as the peer, only after a backoff.
   */
  private async link(peer: LinkPeer): Promise<void> {
    this.pending.add(peer.workerQueue);
    const key = addressKey(peer.address);
    try {
      const found = await probe(peer.address, peer.workerQueue, this.secret);
      if (found.kind === "same") {
        this.backoff.delete(key);
        this.hold(peer, found.socket, found.rest);
      } else if (found.kind !== "refused") {
        const waitMs = Math.min(2 * (this.backoff.get(key)?.waitMs ?? RETRY_AFTER_MS / 2), MAX_RETRY_AFTER_MS);
        this.backoff.set(key, { at: Date.now() + waitMs, waitMs });
      }
    } finally {
      this.pending.delete(peer.workerQueue);
    }
  }

  private hold(peer: LinkPeer, socket: net.Socket, rest: string): void {
    if (this.closed || this.lost.has(peer.workerQueue)) return void socket.destroy();
    const link: Link = { peer, socket, quiet: rest.includes(BYE) };
    this.links.set(peer.workerQueue, link);
    socket.setNoDelay(true);
    socket.setKeepAlive(true, KEEPALIVE_MS);
    const beat = setInterval(() => socket.write("\n"), BEAT_EVERY_MS);
    beat.unref();
    let heard = rest;
    socket.on("data", (chunk: string) => {
      heard = (heard + chunk).slice(-16);
      if (heard.includes(BYE)) link.quiet = true;
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      clearInterval(beat);
      if (this.links.get(peer.workerQueue) === link) this.links.delete(peer.workerQueue);
      if (!link.quiet && !this.closed)
        this.recheck(link.peer).catch((err: unknown) =>
          console.warn(`jai: checking ${peer.workerQueue} again: ${String(err)}`),
        );
    });
  }

  /** A link closed unasked: is anyone there still? */
  private async recheck(peer: LinkPeer): Promise<void> {
    if (this.pending.has(peer.workerQueue)) return;
    this.pending.add(peer.workerQueue);
    try {
      const until = Date.now() + RECHECK_MS;
      let found = await probe(peer.address, peer.workerQueue, this.secret, RECHECK_MS);
      while (found.kind === "closed" && Date.now() + RECHECK_EVERY_MS < until && !this.closed) {
        await new Promise((resolve) => setTimeout(resolve, RECHECK_EVERY_MS));
        found = await probe(peer.address, peer.workerQueue, this.secret, until - Date.now());
      }
      if (found.kind === "same") return this.hold(peer, found.socket, found.rest);
      if (this.closed) return;
      const evidence = found.kind === "other" ? "replaced" : found.kind;
      // A worker found gone is never linked again (a restarted one has another queue); one that did not answer
      // is linked again at a later listing, if it answers then (its ping decides meanwhile).
      if (evidence !== "closed") this.lost.add(peer.workerQueue);
      this.onLost(peer, evidence);
    } finally {
      this.pending.delete(peer.workerQueue);
    }
  }
}

const addressKey = (a: LinkAddress) => `${a.host}:${a.port}`;
