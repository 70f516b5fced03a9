/**
 * A live reader that falls behind while the event tap evicts what it had not read is told so (`restart`) and
 * given the run again from its transcript, instead of skipping the gap silently; the client that follows it
 * (runEvents: `watch`, `handle.events()`) gives each event once across the restart. No Temporal server: the
 * run is a fake reader of a transcript, the response a socket that stops draining.
 */
import { EventEmitter } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "@jest/globals";
import type { Client } from "@temporalio/client";
import type { AgentMessage } from "../../src/shared/contracts.js";
import type { UserMessage } from "@jai/ai";
import { EventTap } from "../../src/worker/events/tap.js";
import { transcriptEvents } from "../../src/client/events/from-history.js";
import { runEvents, type RunReader } from "../../src/client/events/subscribe.js";
import { streamRunEvents } from "../../src/http/sse.js";
import { assistantText } from "../support/messages.js";

const user = (text: string): UserMessage => ({ role: "user", content: text, timestamp: 1 });
/** A run of 12 prompts and answers (~600 bytes each), closed: its transcript and the events it makes. */
const messages: AgentMessage[] = Array.from({ length: 12 }, (_, i) => [
  user(`prompt ${i} `.padEnd(600, "p")),
  assistantText(`answer ${i} `.padEnd(600, "a")),
]).flat();
const events = transcriptEvents(messages, true);
const closedRun: RunReader = { transcript: async () => messages, closed: async () => true };

/** A response whose socket stops draining while `blocked`: each write then waits for "drain". */
class SlowResponse extends EventEmitter {
  body = "";
  blocked = false;
  destroyed = false;
  writeHead() {
    return this;
  }
  write(chunk: string) {
    this.body += chunk;
    return !this.blocked;
  }
  end() {
    this.emit("finish");
  }
}

const ids = (body: string) => [...body.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]);

describe("a live reader behind the tap's evictions", () => {
  it("is sent `restart` and the run from its transcript, not the events after the gap", async () => {
    const tap = new EventTap({ maxRunBytes: 20_000 });
    const ref = { workflowId: "w", runId: "r" };
    for (const event of events.slice(0, 3)) tap.append(ref, event);
    const res = new SlowResponse();
    res.blocked = true;
    const done = streamRunEvents(res as unknown as ServerResponse, closedRun, tap, "w", undefined);
    // The reader's socket took t0 and stopped; the run goes on and the tap evicts what the reader had not read.
    await new Promise((r) => setTimeout(r, 20));
    expect(ids(res.body)).toEqual(["t0"]);
    for (const event of events.slice(3)) tap.append(ref, event);
    // Events right after the reader's batch went (agent_end, the whole transcript, fits the cap and is kept).
    expect(tap.complete("w", 2)).toBe(false);
    expect(tap.since("w", 2)[0].seq).toBeGreaterThan(3);
    expect(tap.since("w", 2).at(-1)?.event.type).toBe("agent_end");
    res.blocked = false;
    res.emit("drain");
    await done;
    const sent = ids(res.body);
    // The batch it had taken (t0-t2), nothing from the tap past the gap: the restart, then every event from the
    // transcript, then the end.
    expect(sent).toEqual(["t0", "t1", "t2", ...events.map((_, i) => `h${i}`)]);
    expect(res.body.indexOf("event: restart")).toBeGreaterThan(res.body.indexOf("id: t2"));
    expect(res.body.indexOf("event: restart")).toBeLessThan(res.body.indexOf("id: h0"));
    expect(res.body.trimEnd().endsWith("event: end\ndata: {}")).toBe(true);
  });

  it("that keeps up, attached before the run's first event, gets every event from the tap and no restart", async () => {
    const tap = new EventTap({ maxRunBytes: 20_000 });
    const ref = { workflowId: "w", runId: "r" };
    let closed = false;
    const res = new SlowResponse();
    const running: RunReader = { transcript: async () => messages, closed: async () => closed };
    const done = streamRunEvents(res as unknown as ServerResponse, running, tap, "w", undefined);
    await new Promise((r) => setTimeout(r, 20));
    for (const event of events) {
      if (event.type === "agent_end") closed = true;
      tap.append(ref, event);
      await new Promise((r) => setImmediate(r));
    }
    await done;
    expect(ids(res.body)).toEqual(events.map((_, i) => `t${i}`));
    expect(res.body).not.toContain("event: restart");
  });

  it("that is new, on a log trimmed from its start, is served what the tap holds and no restart", async () => {
    const tap = new EventTap({ maxRunBytes: 20_000 });
    const ref = { workflowId: "w", runId: "r" };
    for (const event of events) tap.append(ref, event);
    expect(tap.complete("w", -1)).toBe(false);
    const kept = tap.since("w", -1).map((e) => `t${e.seq}`);
    const res = new SlowResponse();
    await streamRunEvents(res as unknown as ServerResponse, closedRun, tap, "w", undefined);
    expect(ids(res.body)).toEqual(kept);
    expect(res.body).not.toContain("event: restart");
  });
});

describe("runEvents across a restart", () => {
  it("gives each event once: the transcript's first events, given already from the tap, are skipped", async () => {
    const frame = (id: string, i: number) => `id: ${id}\nevent: agent\ndata: ${JSON.stringify(events[i])}\n\n`;
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // Five events from the tap, then the server lost some: restart, the whole run from its transcript.
      res.write([0, 1, 2, 3, 4].map((i) => frame(`t${i}`, i)).join(""));
      res.write("event: restart\ndata: {}\n\n");
      res.end(events.map((_, i) => frame(`h${i}`, i)).join("") + "event: end\ndata: {}\n\n");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const got: { cursor: string; type: string }[] = [];
      for await (const { cursor, event } of runEvents({} as Client, "w", closedRun, { url, token: "t" }))
        got.push({ cursor, type: event.type });
      expect(got.map((g) => g.type)).toEqual(events.map((e) => e.type));
      expect(got.map((g) => g.cursor)).toEqual(events.map((_, i) => (i < 5 ? `t${i}` : `h${i}`)));
    } finally {
      server.close();
    }
  });
});
