/**
 * Events a consumer can deduplicate (issue 58): ids of the two forms, the rule that tells a repeat (the highest
 * place seen per emitter; the console bundles the same), the tap dropping repeats, and `handle.events()` (runEvents)
 * giving each event once when its stream repeats one. No Temporal server: test/server/event-repeats.test.ts
 * shows the same through a retried workflow task.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "@jest/globals";
import type { Client } from "@temporalio/client";
import type { UserMessage } from "@jai/ai";
import type { AgentEvent } from "../../src/shared/contracts.js";
import { activityEventId, workflowEventId } from "../../src/node/event-identity.js";
import { EventDeduper, parseEventId } from "../../src/shared/event-ids.js";
import { EventTap } from "../../src/worker/events/tap.js";
import { runEvents, type RunReader } from "../../src/client/events/subscribe.js";

const RUN = "6c1f0a4e-3a5d-4f7e-9a59-0c3b1d2e4f50";
const prompt: UserMessage = { role: "user", content: "hi", timestamp: 1 };
const firstTask: AgentEvent[] = [
  { type: "agent_start" },
  { type: "turn_start" },
  { type: "message_start", message: prompt },
  { type: "message_end", message: prompt },
];

/** The ids a run's workflow code gives these events, numbered from `from`. */
const ids = (events: AgentEvent[], from = 0, run = RUN) => events.map((e, i) => workflowEventId(run, from + i, e));
const restamped = (event: AgentEvent, timestamp: number) =>
  JSON.parse(JSON.stringify(event).replace(/"timestamp":\d+/g, `"timestamp":${timestamp}`)) as AgentEvent;

describe("event ids", () => {
  it("name the run, the emitter and the place, and parse back", () => {
    const [start, , userStart] = ids(firstTask);
    expect(start).toMatch(new RegExp(`^${RUN}/0\\.[\\w-]{8}$`));
    expect(parseEventId(userStart)).toEqual({ emitter: RUN, n: 2, digest: userStart.split(".").at(-1) });
    // An activity id may hold anything, slashes and @ included: the place is what follows the last slash.
    const id = activityEventId(RUN, "tool-1-0-a/b@c", 2, 7);
    expect(id).toBe(`${RUN}/tool-1-0-a/b@c@2/7`);
    expect(parseEventId(id)).toEqual({ emitter: `${RUN}/tool-1-0-a/b@c@2`, n: 7 });
    expect(parseEventId("h4")).toBeUndefined();
    expect(parseEventId(`${RUN}/x`)).toBeUndefined();
    // A bundle that numbers nothing: an id of its own each time, never a repeat.
    const a = workflowEventId(RUN, undefined, firstTask[0]);
    expect(a).not.toBe(workflowEventId(RUN, undefined, firstTask[0]));
    const dedupe = new EventDeduper();
    expect([dedupe.repeat(a), dedupe.repeat(workflowEventId(RUN, undefined, firstTask[0]))]).toEqual([false, false]);
  });

  it("of the workflow's events: the same for an event a retried task restamped, another for another event", () => {
    // The retried task's clock stamps the prompt again: the same event.
    expect(workflowEventId(RUN, 2, restamped(firstTask[2], 99))).toBe(ids(firstTask)[2]);
    // Anything else it says differs: another event at that place.
    const other: AgentEvent = { type: "message_start", message: { ...prompt, content: "hello" } };
    expect(workflowEventId(RUN, 2, other)).not.toBe(ids(firstTask)[2]);
    expect(workflowEventId(RUN, 3, firstTask[2])).not.toBe(ids(firstTask)[2]);
  });

  it("a repeat is an event at or below the highest place seen of its emitter, saying the same there", () => {
    const dedupe = new EventDeduper();
    const model = (attempt: number, n: number) => activityEventId(RUN, "5", attempt, n);
    const end: AgentEvent = { type: "agent_end", messages: [prompt] };
    const turnStart: AgentEvent = { type: "turn_start" };
    const stream = [
      ...ids(firstTask.slice(0, 2)),
      model(1, 0),
      model(1, 1),
      ...ids(firstTask.slice(0, 2).map((e) => restamped(e, 7))), // a task retried after a timeout: the same events
      model(1, 1), // a delivery repeated
      model(2, 0), // a retried activity: a new attempt, new events
      workflowEventId(RUN, 2, end),
      workflowEventId(RUN, 2, turnStart), // a refused task's retry took another path: a new event at place 2
      workflowEventId(RUN, 2, turnStart), // ... which a further retry repeats
      workflowEventId(RUN, 2, end), // (and the first path's event, again, is not new either)
      workflowEventId("other-run", 0, firstTask[0]), // continue-as-new: another run id, another emitter
      "h3",
      "h3", // ids of no known form are never repeats (the transcript's positions: their cursors place them)
      undefined,
    ];
    expect(stream.map((id) => dedupe.repeat(id))).toEqual([
      false,
      false,
      false,
      false,
      true,
      true,
      true,
      false,
      false,
      false,
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it("forgets the emitters seen longest ago beyond its bound, never the one in use", () => {
    const dedupe = new EventDeduper(2);
    const [first, second] = ids(firstTask);
    dedupe.repeat(first);
    dedupe.repeat(activityEventId(RUN, "a", 1, 0));
    dedupe.repeat(second); // the run's workflow code: the most recent again
    dedupe.repeat(activityEventId(RUN, "b", 1, 0)); // forgets "a"
    expect(dedupe.repeat(second)).toBe(true);
    expect(dedupe.repeat(activityEventId(RUN, "a", 1, 0))).toBe(false);
  });
});

describe("the event tap", () => {
  it("keeps each event once: a repeat takes no sequence number and wakes no reader", () => {
    const tap = new EventTap();
    const deliver = (events: AgentEvent[], from = 0) =>
      events.forEach((event, i) =>
        tap.append({ workflowId: "w", runId: RUN, eventId: workflowEventId(RUN, from + i, event) }, event),
      );
    deliver(firstTask);
    deliver(firstTask); // the first workflow task, timed out and retried
    deliver([{ type: "agent_end", messages: [prompt] }], 4);
    const kept = tap.since("w", -1);
    expect(kept.map((e) => e.event.type)).toEqual([...firstTask.map((e) => e.type), "agent_end"]);
    expect(kept.map((e) => e.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(kept.map((e) => e.id)).toEqual(ids([...firstTask, { type: "agent_end", messages: [prompt] }]));
    expect(tap.repeatsDropped).toBe(4);
  });
});

describe("runEvents (handle.events())", () => {
  it("gives each event once when its stream repeats one, with the event's id", async () => {
    const end: AgentEvent = { type: "agent_end", messages: [prompt] };
    const eventIds = ids([...firstTask, end]);
    const frame = (cursor: string, event: AgentEvent, eventId?: string) =>
      `id: ${cursor}\nevent: agent\ndata: ${JSON.stringify({ ...event, ...(eventId ? { eventId } : {}) })}\n\n`;
    // A tap that kept the repeats (one of another version, or two workers' events): t4-t7 repeat t0-t3.
    const body = [
      ...[...firstTask, ...firstTask].map((e, i) => frame(`t${i}`, e, eventIds[i % 4])),
      frame("t8", end, eventIds[4]),
      "event: end\ndata: {}\n\n",
    ].join("");
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(body);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const closedRun: RunReader = { transcript: async () => [prompt], closed: async () => true };
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const got: { cursor: string; id: string; event: AgentEvent }[] = [];
      for await (const e of runEvents({} as Client, "w", closedRun, { url, token: "t" })) got.push(e);
      expect(got.map((g) => g.event.type)).toEqual([...firstTask.map((e) => e.type), "agent_end"]);
      expect(got.map((g) => g.id)).toEqual(eventIds);
      expect(got.map((g) => g.cursor)).toEqual(["t0", "t1", "t2", "t3", "t8"]);
      // The id is beside the event, not in it: the event is what onEvent got.
      expect(got[0].event).toEqual({ type: "agent_start" });
    } finally {
      server.close();
    }
  });
});
