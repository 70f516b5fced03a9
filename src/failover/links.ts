/**
 * Links: a direct TCP connection from every fast-failover worker to every other one of its fleet.
 *
 * A worker that is SIGKILLed (or crashes) has its sockets closed by its kernel at once, so every peer linked to it
 * knows within milliseconds; its presence heartbeats take a presence timeout and then a ping to say the same (2-4 s
 * after the kill on a loaded 2-core machine, and that wait is what its runs' replays then queue behind). A peer
 * whose link closed checks the address once more: nothing listening there (connection refused), or another worker
 * answering, means the worker is gone, and its presence workflow fails it over at once. Anything else (a network
 * blip, a host that does not answer) only makes the presence ping the worker now instead of waiting for its
 * heartbeats to stop: the ping still decides.
 *
 * A link carries one line each way: the listener names its worker when a peer connects ("jai-link <worker
 * queue>"), and says "bye" when it closes on purpose (a graceful shutdown, after the worker's drain), so a worker
 * that leaves is never failed over. A paused worker (SIGSTOP) keeps its links: its heartbeats tell.
 */
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
 * "replaced" (another worker does) mean the peer is gone; "closed" (no answer in time, or another error) may be a
 * network's doing.
 */
export type LinkEvidence = "refused" | "replaced" | "closed";

/** Options of a worker's links (`fastFailover.links`). */
export interface LinkOptions {
  /** Interface the listener binds. Default: all ("0.0.0.0"). */
  host?: string;
  /** Port of the listener. Default: 0, any free one (peers learn it from the worker's presence). */
  port?: number;
  /**
   * Host peers connect to. Default: `host` when it names one interface, else this machine's first non-internal
   * IPv4 address (a container's own address), else 127.0.0.1.
   */
  advertise?: string;
}

const HELLO = "jai-link ";
const BYE = "bye";
/** How long a bye has to reach a peer before the socket is destroyed. */
const BYE_GRACE_MS = 1000;
/** Keepalive on links: a peer that vanished without a close (a host powered off) is noticed in tens of seconds. */
const KEEPALIVE_MS = 10_000;
/** How long a peer has to name itself on first contact (a saturated worker's event loop can be seconds late). */
const HELLO_TIMEOUT_MS = 5000;
/**
 * A closed link is checked again for this long, every `RECHECK_EVERY_MS`, until the address says something clear:
 * a killed process closes its sockets one by one, so a connection can reach its listener just before that one
 * closes too, and be reset rather than refused.
 */
const RECHECK_MS = 2000;
const RECHECK_EVERY_MS = 50;

/** "same": the socket stays open, with what came after the hello line (a bye may come with it). */
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

/** An address a peer can be reached at: a host and a TCP port (what `net.connect` would otherwise throw for). */
function isLinkAddress(address: unknown): address is LinkAddress {
  const a = address as Partial<LinkAddress> | null | undefined;
  return typeof a?.host === "string" && a.host.length > 0 && Number.isInteger(a.port) && a.port! > 0 && a.port! < 65536;
}

/**
 * Connects to `address` and reads the peer's name: "same" (it is `workerQueue`; the socket stays open), "other" (a
 * different worker answers there), or what the failure says.
 */
function probe(address: LinkAddress, workerQueue: string, timeoutMs = HELLO_TIMEOUT_MS): Promise<Probe> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: address.host, port: address.port });
    let line = "";
    const onData = (chunk: string) => {
      line += chunk;
      const end = line.indexOf("\n");
      if (end >= 0)
        done(
          line.slice(0, end) === HELLO + workerQueue
            ? { kind: "same", socket, rest: line.slice(end + 1) }
            : { kind: "other" },
        );
    };
    const onError = (err: NodeJS.ErrnoException) => done({ kind: err.code === "ECONNREFUSED" ? "refused" : "closed" });
    const onClose = () => done({ kind: "closed" });
    const timer = setTimeout(onClose, timeoutMs);
    function done(result: Probe) {
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
  private readonly accepted = new Set<net.Socket>();
  private readonly links = new Map<string, Link>();
  /** Peers being connected to, or checked again. */
  private readonly pending = new Set<string>();
  /** Peers reported gone: never linked again (a restarted worker has another queue). */
  private readonly lost = new Set<string>();
  private closed = false;
  /** Where peers reach this worker, once it listens. */
  address?: LinkAddress;

  constructor(
    /** This worker's own queue: what it names itself by. */
    readonly workerQueue: string,
    private readonly onLost: (peer: LinkPeer, evidence: LinkEvidence) => void,
    private readonly options: LinkOptions = {},
  ) {}

  /** Starts the listener; resolves with the address peers are told. */
  async listen(): Promise<LinkAddress> {
    const host = this.options.host ?? "0.0.0.0";
    const server = net.createServer((socket) => {
      if (this.closed) return void socket.destroy();
      this.accepted.add(socket);
      socket.setNoDelay(true);
      socket.on("error", () => {});
      socket.on("close", () => this.accepted.delete(socket));
      socket.resume(); // nothing is read from a peer
      socket.write(`${HELLO}${this.workerQueue}\n`);
    });
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
   * The fleet as its presences show it now: links the new peers, drops the ones that left it. A peer whose memo
   * gives no address a socket can have (a hand-started presence, another version's) is left to its heartbeats:
   * every worker lists the same memo, and a throw there would end them all.
   */
  update(peers: LinkPeer[]): void {
    if (this.closed) return;
    const listed = new Map(
      peers
        .filter((p) => p.workerQueue !== this.workerQueue && isLinkAddress(p.address))
        .map((p) => [p.workerQueue, p]),
    );
    for (const [queue, link] of this.links) {
      const now = listed.get(queue);
      if (now)
        link.peer = now; // its presence may have been restarted: news goes to the running one
      else this.drop(queue);
    }
    for (const peer of listed.values())
      if (!this.links.has(peer.workerQueue) && !this.pending.has(peer.workerQueue) && !this.lost.has(peer.workerQueue))
        this.link(peer).catch((err: unknown) => console.warn(`jai: linking ${peer.workerQueue}: ${String(err)}`));
  }

  /** How many peers hold a link to this worker now (connections its listener accepted and keeps). */
  linkedBy(): number {
    return this.accepted.size;
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

  /** First contact: a peer that cannot be reached is tried again at the next update (its heartbeats still tell). */
  private async link(peer: LinkPeer): Promise<void> {
    this.pending.add(peer.workerQueue);
    try {
      const found = await probe(peer.address, peer.workerQueue);
      if (found.kind === "same") this.hold(peer, found.socket, found.rest);
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
    let heard = rest;
    socket.on("data", (chunk: string) => {
      heard = (heard + chunk).slice(-16);
      if (heard.includes(BYE)) link.quiet = true;
    });
    socket.on("error", () => {});
    socket.on("close", () => {
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
      let found = await probe(peer.address, peer.workerQueue, RECHECK_MS);
      while (found.kind === "closed" && Date.now() + RECHECK_EVERY_MS < until && !this.closed) {
        await new Promise((resolve) => setTimeout(resolve, RECHECK_EVERY_MS));
        found = await probe(peer.address, peer.workerQueue, until - Date.now());
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
