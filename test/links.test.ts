/**
 * Links between fast-failover workers (src/failover/links.ts): what a closed link is taken for. The peer is a
 * plain TCP server speaking the links' one-line protocol, so the test decides how it goes: killed (its sockets
 * reset, its port closed), replaced by another worker on its port, leaving with a bye, or only dropping a link.
 * A real SIGKILLed worker process is in test/failover.test.ts.
 */
import { afterEach, describe, expect, it } from "@jest/globals";
import net from "node:net";
import { advertisedHost, PeerLinks, type LinkEvidence, type LinkPeer } from "../src/failover/links.js";
import { waitFor } from "./crash/harness.js";

const WAIT_MS = 5000;

/** A peer named `queue`: a server that says hello on each connection (the sockets are kept to be cut). */
async function fakePeer(queue: string, port = 0) {
  const sockets = new Set<net.Socket>();
  const peer = {
    /** Says nothing to a new connection: its event loop is stuck, or something else took the port. */
    silent: false,
    /** What it says on connect. */
    hello: `jai-link ${queue}\n`,
  };
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    if (!peer.silent) socket.write(peer.hello);
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
  const links = new PeerLinks("me", (peer, evidence) => news.push({ peer, evidence }), { host: "127.0.0.1" });
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
    b.mode.hello = "jai-link b\nbye\n";
    const { news } = await linkedTo(b.peer());
    await b.crash();
    await pause(300);
    expect(news).toEqual([]);
  });
});

describe("a worker's listener", () => {
  it("names its worker to each peer, and says bye when it closes", async () => {
    const links = new PeerLinks("w1", () => {}, { host: "127.0.0.1" });
    const address = await links.listen();
    expect(address.host).toBe("127.0.0.1");
    const socket = net.connect(address);
    socket.setEncoding("utf8");
    let heard = "";
    socket.on("data", (d: string) => (heard += d));
    await waitFor(() => heard.includes("\n"), WAIT_MS, "the hello");
    expect(heard).toBe("jai-link w1\n");
    await links.close();
    await waitFor(() => heard.includes("bye"), WAIT_MS, "the bye");
    expect(heard).toBe("jai-link w1\nbye\n");
    socket.destroy();
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
