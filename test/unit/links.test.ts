/**
 * Links between fast-failover workers (src/failover/links.ts): what a closed link is taken for. The peer is a
 * plain TCP server speaking the links' one-line protocol, so the test decides how it goes: killed (its sockets
 * reset, its port closed), replaced by another worker on its port, leaving with a bye, or only dropping a link.
 * A real SIGKILLed worker process is in test/process/failover.test.ts.
 */
import { afterEach, describe, expect, it } from "@jest/globals";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { advertisedHost, macOf, PeerLinks, type LinkEvidence, type LinkPeer } from "../../src/failover/links.js";
import { waitFor } from "../support/crash/harness.js";

const WAIT_MS = 5000;

/** The fleet's shared secret in these tests. */
const SECRET = "links-test-secret-0123456789abcdef";

/**
 * A peer named `queue`: a server that speaks the links' handshake on each connection, proving `secret` (the
 * sockets are kept to be cut).
 */
async function fakePeer(queue: string, port = 0, secret: string | null = SECRET) {
  const sockets = new Set<net.Socket>();
  const peer = {
    /** Says nothing to a new connection: its event loop is stuck, or something else took the port. */
    silent: false,
    /** What it says after its name (e.g. a bye). */
    after: "",
  };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    if (peer.silent) return;
    const ours = randomBytes(16).toString("hex");
    socket.setEncoding("utf8");
    let heard = "";
    let answered = false;
    socket.on("data", (d: string) => {
      if (answered) return; // beats
      heard += d;
      const end = heard.indexOf("\n");
      if (end < 0) return;
      answered = true;
      const [theirs, proof] = heard.slice(0, end).split(" ");
      const key = secret ?? undefined;
      if (proof !== macOf(key, "link-connect", [ours, theirs])) return void socket.destroy();
      socket.write(`${macOf(key, "link-accept", [theirs, ours, queue])} ${queue}\n${peer.after}`);
    });
    socket.write(`jai-link/2 ${ours}\n`);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = { host: "127.0.0.1", port: (server.address() as net.AddressInfo).port };
  return {
    mode: peer,
    address,
    sockets,
    peer: (presenceWorkflowId = `jai-presence-${queue}-1`): LinkPeer => ({
      workerQueue: queue,
      address,
      presenceWorkflowId,
    }),
    /** What a kill does: every connection reset, nothing listening any more. */
    async crash() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const s of sockets) s.resetAndDestroy();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((o) => o.close().catch(() => {})));
});

function watcher() {
  const news: { peer: LinkPeer; evidence: LinkEvidence }[] = [];
  const links = new PeerLinks("me", (peer, evidence) => news.push({ peer, evidence }), { host: "127.0.0.1" }, SECRET);
  opened.push(links);
  return { links, news };
}

/** A watcher linked to `peer` (a fake peer's `peer()`). */
async function linkedTo(peer: LinkPeer) {
  const w = watcher();
  w.links.update([peer]);
  await waitFor(() => w.links.linked().includes(peer.workerQueue), WAIT_MS, "the link");
  return w;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("a link to a peer", () => {
  it("that is killed: nothing listens at its address any more, its presence is told so (refused)", async () => {
    const b = await fakePeer("b");
    const { links, news } = await linkedTo(b.peer());
    await b.crash();
    await waitFor(() => news.length > 0, WAIT_MS, "the news");
    expect(news).toEqual([{ peer: b.peer(), evidence: "refused" }]);
    expect(links.linked()).toEqual([]);
    // Told once: a lost peer is never linked again, even if it is listed still.
    links.update([b.peer()]);
    await pause(100);
    expect(news).toHaveLength(1);
  });

  it("whose port another worker holds now: replaced", async () => {
    const b = await fakePeer("b");
    const { news } = await linkedTo(b.peer());
    await b.crash();
    const c = await fakePeer("c", b.address.port); // bound before the closed link is checked again
    opened.push(c);
    await waitFor(() => news.length > 0, WAIT_MS, "the news");
    expect(news.map((n) => n.evidence)).toEqual(["replaced"]);
  });

  it("that leaves saying bye, or only drops the connection and still answers, is not news", async () => {
    const b = await fakePeer("b");
    opened.push(b);
    const { links, news } = watcher();
    links.update([b.peer()]);
    await waitFor(() => b.sockets.size === 1 && links.linked().includes("b"), WAIT_MS, "the link");
    // A dropped connection with the peer still there: linked again, nothing said.
    const [first] = b.sockets;
    first.resetAndDestroy();
    await waitFor(
      () => b.sockets.size === 1 && !b.sockets.has(first) && links.linked().includes("b"),
      WAIT_MS,
      "the link again",
    );
    // A bye, then the close: a graceful leave.
    for (const s of b.sockets) s.end("bye\n");
    await waitFor(() => !links.linked().includes("b"), WAIT_MS, "the close");
    await pause(200);
    expect(news).toEqual([]);
  });

  it("whose presence is no longer listed is dropped quietly, and news goes to its newest presence", async () => {
    const b = await fakePeer("b");
    const c = await fakePeer("c");
    opened.push(b);
    const { links, news } = watcher();
    links.update([b.peer(), c.peer(), { ...c.peer(), workerQueue: "me" }]);
    await waitFor(() => links.linked().length === 2, WAIT_MS, "both links");
    expect(links.linked().sort()).toEqual(["b", "c"]); // never itself
    links.update([c.peer("jai-presence-c-2")]);
    await waitFor(() => b.sockets.size === 0, WAIT_MS, "b's link closed");
    expect(links.linked()).toEqual(["c"]);
    await c.crash();
    await waitFor(() => news.length > 0, WAIT_MS, "the news");
    expect(news).toEqual([{ peer: c.peer("jai-presence-c-2"), evidence: "refused" }]);
  });

  it("that cannot be reached at first is not news: it is tried again at the next listing", async () => {
    const b = await fakePeer("b");
    await b.close();
    const { links, news } = watcher();
    links.update([b.peer()]);
    await pause(200);
    expect(links.linked()).toEqual([]);
    expect(news).toEqual([]);
    const again = await fakePeer("b", b.address.port);
    opened.push(again);
    links.update([b.peer()]);
    await waitFor(() => links.linked().includes("b"), WAIT_MS, "the link");
  });
});

describe("a peer's address", () => {
  it("that no socket can have (a hand-started or older presence's memo) is never linked, and crashes nothing", async () => {
    const rejections: unknown[] = [];
    const onRejection = (reason: unknown) => void rejections.push(reason);
    process.on("unhandledRejection", onRejection);
    try {
      const b = await fakePeer("b");
      opened.push(b);
      const { links, news } = watcher();
      const bad = (address: unknown): LinkPeer => ({ ...b.peer(), address: address as LinkPeer["address"] });
      // Every worker of the fleet lists the same memo: one throw there would end them all.
      links.update([bad({ host: "127.0.0.1", port: 70000 })]);
      links.update([bad({ host: "127.0.0.1" })]);
      links.update([bad({ host: "127.0.0.1", port: "x" })]);
      links.update([bad(null)]);
      await pause(300);
      expect(rejections).toEqual([]);
      expect(links.linked()).toEqual([]);
      expect(news).toEqual([]);
      // The same peer at its real address links as ever.
      links.update([b.peer()]);
      await waitFor(() => links.linked().includes("b"), WAIT_MS, "the link");
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });
});

describe("a link that closes", () => {
  it("where nothing answers clearly is unsure news (closed), and the peer is linked again once it answers", async () => {
    const b = await fakePeer("b");
    opened.push(b);
    const { links, news } = await linkedTo(b.peer());
    b.mode.silent = true;
    const [first] = b.sockets;
    first.resetAndDestroy();
    await waitFor(() => news.length > 0, 8000, "the news"); // after the 2 s check
    expect(news.map((n) => n.evidence)).toEqual(["closed"]);
    // Its ping decides; a worker that answers again is linked again at the next listing.
    b.mode.silent = false;
    links.update([b.peer()]);
    await waitFor(() => links.linked().includes("b"), WAIT_MS, "the link again");
  });

  it("after a bye that came with the hello is not news", async () => {
    const b = await fakePeer("b");
    opened.push(b);
    b.mode.after = "bye\n";
    const { news } = await linkedTo(b.peer());
    await b.crash();
    await pause(300);
    expect(news).toEqual([]);
  });
});

describe("a stranger on the network (does not know the secret)", () => {
  /** A worker's listener, and a real peer of its fleet that links to it. */
  async function worker(queue = "w1-secret-queue") {
    const news: LinkEvidence[] = [];
    const links = new PeerLinks(queue, (_, evidence) => news.push(evidence), { host: "127.0.0.1" }, SECRET);
    opened.push(links);
    const address = await links.listen();
    const peerLinks = async () => {
      const peer = new PeerLinks("w2", () => {}, { host: "127.0.0.1" }, SECRET);
      opened.push(peer);
      peer.update([{ workerQueue: queue, address, presenceWorkflowId: `jai-presence-${queue}-1` }]);
      await waitFor(() => peer.linked().includes(queue), WAIT_MS, "a real peer's link");
    };
    return { queue, links, address, news, peerLinks };
  }

  it("who connects is told nothing, not even the queue name, and is dropped after the handshake timeout", async () => {
    const w = await worker();
    const startedAt = Date.now();
    const [silent, guessing] = [await connectAs(w.address), await connectAs(w.address, "a-guessed-secret-0123456789")];
    await waitFor(() => guessing.closed, WAIT_MS, "the wrong proof to be refused");
    await waitFor(() => silent.closed, 8000, "the handshake timeout");
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(4000);
    for (const stranger of [silent, guessing]) {
      expect(stranger.heard).toMatch(/^jai-link\/2 [0-9a-f]{32}\n$/);
      expect(stranger.heard).not.toContain(w.queue);
    }
    expect(w.links.held()).toEqual({ linked: 0, handshaking: 0 });
  }, 15000);

  it("who sends garbage (or a forged bye, a forged report) is dropped at once, and the worker goes on", async () => {
    const w = await worker();
    const b = await fakePeer("b");
    opened.push(b);
    w.links.update([b.peer()]);
    await waitFor(() => w.links.linked().includes("b"), WAIT_MS, "the worker's own link");
    const sends = [
      randomBytes(5000).toString("latin1"), // no line end: past the longest line
      "garbage\n",
      "bye\n",
      `${randomBytes(16).toString("hex")} ${"0".repeat(64)}\n`, // a well-formed proof that proves nothing
      `{"evidence":"refused","by":"b"}\nclosed\n`,
    ];
    const strangers = await Promise.all(sends.map(() => connectAs(w.address)));
    strangers.forEach((s, i) => s.socket.write(sends[i]));
    await waitFor(() => strangers.every((s) => s.closed), 2000, "every stranger to be dropped");
    for (const s of strangers) expect(s.heard).not.toContain(w.queue);
    // The worker goes on: its own link stands, nothing is news, and a real peer links to it.
    await w.peerLinks();
    expect(w.links.linked()).toEqual(["b"]);
    expect(w.news).toEqual([]);
    expect(w.links.held()).toEqual({ linked: 1, handshaking: 0 });
  });

  it("who opens 1,000 connections holds a bounded few of the worker's sockets: a real peer still links", async () => {
    const w = await worker();
    const strangers: Awaited<ReturnType<typeof connectAs>>[] = [];
    for (let i = 0; i < 10; i++)
      strangers.push(...(await Promise.all(Array.from({ length: 100 }, () => connectAs(w.address)))));
    // The oldest unproven ones make room for newer ones: at most 16 held, the rest dropped at once.
    await waitFor(() => strangers.filter((s) => !s.closed).length <= 16, WAIT_MS, "the flood to be dropped");
    expect(w.links.held().handshaking).toBeLessThanOrEqual(16);
    // Still flooded (the last ones are held until their handshake timeout): a real peer links.
    await w.peerLinks();
    expect(w.links.held().linked).toBe(1);
    for (const s of strangers) expect(s.heard).not.toContain(w.queue);
    strangers.forEach((s) => s.socket.destroy());
  }, 20000);

  it("who answers at a listed address but not as the peer is tried again only after a backoff", async () => {
    let connections = 0;
    const stranger = net.createServer((socket) => {
      connections++;
      socket.on("error", () => {});
      socket.end("jai-link w1\n"); // the old hello: no proof
    });
    await new Promise<void>((resolve) => stranger.listen(0, "127.0.0.1", resolve));
    opened.push({ close: () => new Promise<void>((resolve) => stranger.close(() => resolve())) });
    const { links, news } = watcher();
    const listed: LinkPeer = {
      workerQueue: "w1",
      address: { host: "127.0.0.1", port: (stranger.address() as net.AddressInfo).port },
      presenceWorkflowId: "jai-presence-w1-1",
    };
    for (let i = 0; i < 5; i++) {
      links.update([listed]);
      await pause(300);
    }
    expect(connections).toBe(1);
    expect(links.linked()).toEqual([]);
    expect(news).toEqual([]);
  });
});

describe("links without a secret", () => {
  it("listen on loopback only, refuse a wider interface, and link only to loopback addresses", async () => {
    const links = new PeerLinks("w1", () => {}, {});
    opened.push(links);
    const address = await links.listen();
    expect(address.host).toBe("127.0.0.1");
    expect(() => new PeerLinks("w1", () => {}, { host: "0.0.0.0" })).toThrow(TypeError);
    expect(() => new PeerLinks("w1", () => {}, { advertise: "10.1.2.3" })).toThrow(TypeError);
    expect(() => new PeerLinks("w1", () => {}, {}, "short")).toThrow(RangeError);
    // A peer of the same host links; one with a secret does not (nor does it learn anything).
    const b = await fakePeer("b", 0, null);
    const c = await fakePeer("c", 0, SECRET);
    opened.push(b, c);
    const unproven = new PeerLinks("me", () => {}, { host: "127.0.0.1" });
    opened.push(unproven);
    unproven.update([b.peer(), c.peer(), { ...b.peer(), workerQueue: "far", address: { host: "192.0.2.1", port: 1 } }]);
    await waitFor(() => unproven.linked().includes("b"), WAIT_MS, "the loopback link");
    await pause(300);
    expect(unproven.linked()).toEqual(["b"]);
  });
});

describe("a worker's listener", () => {
  it("names its worker only to a peer that proves the secret, and says bye when it closes", async () => {
    const links = new PeerLinks("w1", () => {}, { host: "127.0.0.1" }, SECRET);
    opened.push(links);
    const address = await links.listen();
    expect(address.host).toBe("127.0.0.1");
    const peer = await connectAs(address, SECRET);
    await waitFor(() => peer.heard.split("\n").length === 3, WAIT_MS, "the name");
    const [, accept] = peer.heard.split("\n");
    expect(accept).toBe(`${macOf(SECRET, "link-accept", [peer.ours, peer.theirs, "w1"])} w1`);
    expect(links.held()).toEqual({ linked: 1, handshaking: 0 });
    await links.close();
    await waitFor(() => peer.heard.endsWith("bye\n"), WAIT_MS, "the bye");
    peer.socket.destroy();
  });

  it("is advertised at the interface it binds, or the first non-internal IPv4 address when it binds them all", () => {
    expect(advertisedHost("10.1.2.3")).toBe("10.1.2.3");
    const interfaces = {
      lo: [{ address: "127.0.0.1", family: "IPv4", internal: true }],
      eth0: [
        { address: "fd00::2", family: "IPv6", internal: false },
        { address: "172.18.0.5", family: "IPv4", internal: false },
      ],
    } as unknown as ReturnType<typeof import("node:os").networkInterfaces>;
    expect(advertisedHost("0.0.0.0", interfaces)).toBe("172.18.0.5");
    expect(advertisedHost("0.0.0.0", { lo: interfaces.lo })).toBe("127.0.0.1");
  });
});

/**
 * Connects to a listener and, with `secret`, answers its challenge as a peer of the fleet would (a wrong secret:
 * as a stranger who guessed). Everything the listener says is in `heard`; `closed` once it hung up.
 */
async function connectAs(address: { host: string; port: number }, secret?: string) {
  const socket = net.connect(address);
  socket.setEncoding("utf8");
  const peer = { socket, heard: "", closed: false, ours: randomBytes(16).toString("hex"), theirs: "" };
  socket.on("error", () => {});
  socket.on("close", () => (peer.closed = true));
  socket.on("data", (d: string) => {
    peer.heard += d;
    const greeting = /^jai-link\/2 ([0-9a-f]{32})\n/.exec(peer.heard);
    if (secret !== undefined && greeting && !peer.theirs) {
      peer.theirs = greeting[1];
      socket.write(`${peer.ours} ${macOf(secret, "link-connect", [peer.theirs, peer.ours])}\n`);
    }
  });
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  return peer;
}
