/**
 * The event tap honours its per-run byte cap for every kind of event (issue
 * 36, row 12), and resuming from a cursor stays truthful after eviction. Pure.
 */
import { describe, expect, it } from "@jest/globals";
import type { ToolResultMessage } from "@jai/ai";
import { EventTap } from "../../src/worker/events/tap.js";
import { partialRebuilder, type SequencedEvent } from "../../src/shared/event-wire.js";
import type { AgentEvent } from "../../src/shared/contracts.js";
import { assistantText } from "../support/messages.js";

const run = { workflowId: "w", runId: "r" };
const stored = (events: SequencedEvent[]) =>
  events.reduce((n, e) => n + Buffer.byteLength(JSON.stringify(e.event), "utf8"), 0);

/** The events of one tool call with a result of `size` bytes: start, end, and its result message. */
function toolCall(i: number, size: number): AgentEvent[] {
  const result = { content: [{ type: "text" as const, text: `${i}:`.padEnd(size, "r") }], details: {} };
  const message: ToolResultMessage = {
    role: "toolResult",
    toolCallId: `c${i}`,
    toolName: "read",
    content: result.content,
    isError: false,
    timestamp: i,
  };
  return [
    { type: "tool_execution_start", toolCallId: `c${i}`, toolName: "read", args: { i } },
    { type: "tool_execution_end", toolCallId: `c${i}`, toolName: "read", result, isError: false },
    { type: "message_start", message },
    { type: "message_end", message },
  ];
}

describe("event tap byte cap", () => {
  it("one run with 4,000 large tool results stays within maxRunBytes, newest kept", () => {
    const maxRunBytes = 4 * 1024 * 1024;
    const tap = new EventTap({ maxRunBytes });
    let peak = 0;
    for (let i = 0; i < 4000; i++) {
      for (const event of toolCall(i, 20_000)) tap.append(run, event);
      if (i % 500 === 0) peak = Math.max(peak, stored(tap.since("w", -1)));
    }
    const kept = tap.since("w", -1);
    // Counted the way it is served: each event's JSON in UTF-8 (about 240 MB were held before the cap).
    expect(Math.max(peak, stored(kept))).toBeLessThanOrEqual(maxRunBytes);
    expect(tap.bytes("w")).toBe(stored(kept));
    // The newest events are the ones kept, in order, each once.
    expect(kept.at(-1)!.seq).toBe(tap.head("w") - 1);
    expect(kept.map((e) => e.seq)).toEqual(Array.from({ length: kept.length }, (_, k) => kept[0].seq + k));
    expect(kept.length).toBeGreaterThan(100);
  });

  it("resuming from a cursor after eviction: every event after a covered cursor, a truthful gap after an evicted one", () => {
    const tap = new EventTap({ maxRunBytes: 200_000 });
    const all: AgentEvent[] = [];
    const push = (event: AgentEvent) => {
      all.push(event);
      tap.append(run, event);
    };
    push({ type: "agent_start" });
    for (let i = 0; i < 10; i++) toolCall(i, 1000).forEach(push);
    // A reader that had followed the first 41 events (seq 0..40) leaves.
    const early = 40;
    expect(tap.complete("w", early)).toBe(true);
    for (let i = 10; i < 400; i++) toolCall(i, 1000).forEach(push);
    // One that had followed up to near the end leaves too.
    const late = tap.head("w") - 20;
    for (let i = 400; i < 410; i++) toolCall(i, 1000).forEach(push);
    expect(tap.bytes("w")).toBeLessThanOrEqual(200_000);

    // The late reader's cursor is still covered: it gets exactly what came after it.
    expect(tap.complete("w", late)).toBe(true);
    const resumed = tap.since("w", late);
    expect(resumed.map((e) => e.seq)).toEqual(Array.from({ length: all.length - late - 1 }, (_, k) => late + 1 + k));
    expect(resumed.map((e) => e.event)).toEqual(all.slice(late + 1));

    // The early reader's events were evicted: the tap says so instead of passing the gap off as the whole stream.
    expect(tap.complete("w", early)).toBe(false);
    const gap = tap.since("w", early);
    expect(gap[0].seq).toBeGreaterThan(early + 1);
    expect(gap.map((e) => e.event)).toEqual(all.slice(gap[0].seq));
    // The oldest kept event's predecessor is where the tap's coverage starts.
    expect(tap.complete("w", gap[0].seq - 1)).toBe(true);
    expect(tap.complete("unknown", -1)).toBe(false);
  });

  it("a stream bigger than the cap: no delta is kept without its message_start, and the next stream is whole", () => {
    const tap = new EventTap({ maxRunBytes: 20_000 });
    const stream = (text: string, deltas: number) => {
      const partial = assistantText("");
      tap.append(run, { type: "message_start", message: partial });
      for (let i = 0; i < deltas; i++)
        tap.append(run, {
          type: "message_update",
          message: partial,
          assistantEvent: { type: "text_delta", contentIndex: 0, delta: text, partial },
        });
      tap.append(run, { type: "message_end", message: assistantText(text.repeat(deltas)) });
    };
    stream("x".repeat(100), 1000); // ~150 KB of deltas
    expect(tap.bytes("w")).toBeLessThanOrEqual(20_000);
    let kept = tap.since("w", -1);
    expect(kept.some((e) => e.event.type === "message_update")).toBe(false);
    stream("y", 50);
    kept = tap.since("w", -1);
    expect(tap.bytes("w")).toBeLessThanOrEqual(20_000);
    // A reader from the start rebuilds the second stream's partial message from what is kept.
    const rebuild = partialRebuilder();
    let text = "";
    for (const { event } of kept) {
      const out = rebuild(event);
      if (out.type === "message_update") text = (out.message.content[0] as { text: string }).text;
    }
    expect(text).toBe("y".repeat(50));
  });

  it("an event bigger than the whole cap is not kept, and cursors before it are not complete", () => {
    const tap = new EventTap({ maxRunBytes: 10_000 });
    tap.append(run, { type: "agent_start" });
    toolCall(0, 50_000).forEach((e) => tap.append(run, e));
    tap.append(run, { type: "agent_end", messages: [] });
    expect(tap.bytes("w")).toBeLessThanOrEqual(10_000);
    expect(tap.since("w", -1).map((e) => e.event.type)).toEqual(["agent_start", "tool_execution_start", "agent_end"]);
    expect(tap.complete("w", 0)).toBe(false);
    expect(tap.complete("w", 4)).toBe(true);
  });
});

describe("event tap: a forgotten run that comes back", () => {
  it("numbers on from where it was, so a cursor from before gets the new events and is not served as complete", () => {
    const tap = new EventTap({ maxRuns: 2 });
    const a = { workflowId: "a", runId: "ra" };
    for (const event of toolCall(1, 10)) tap.append(a, event);
    const cursor = tap.since("a", -1).at(-1)!.seq; // a reader that read all of a's events so far
    expect(cursor).toBe(3);
    // Two other runs push a out; a's next events (one of them lost with it) come after.
    tap.append({ workflowId: "b", runId: "rb" }, { type: "agent_start" });
    tap.append({ workflowId: "c", runId: "rc" }, { type: "agent_start" });
    expect(tap.has("a")).toBe(false);
    expect(tap.head("a")).toBe(4);
    for (const event of toolCall(2, 10)) tap.append(a, event);
    const after = tap.since("a", cursor);
    expect(after.map((e) => e.seq)).toEqual([4, 5, 6, 7]);
    expect(after[0].event).toMatchObject({ type: "tool_execution_start", toolCallId: "c2" });
    // Nothing was lost between the cursor and the run's return here; a cursor older than that, or from the start,
    // lost the events the tap forgot.
    expect(tap.complete("a", cursor)).toBe(true);
    expect(tap.complete("a", 1)).toBe(false);
    expect(tap.complete("a", -1)).toBe(false);
  });

  it("remembers where forgotten runs were for ten times maxRuns of them, then forgets the oldest", () => {
    const tap = new EventTap({ maxRuns: 1 });
    for (let i = 0; i < 12; i++) tap.append({ workflowId: `r${i}`, runId: "x" }, { type: "agent_start" });
    // r11 is held; r1..r10 are remembered; r0, the oldest forgotten, is not.
    expect(tap.head("r10")).toBe(1);
    expect(tap.head("r1")).toBe(1);
    expect(tap.head("r0")).toBe(0);
  });
});
