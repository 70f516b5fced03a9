/**
 * A retried workflow task emits its events again (issue 58: on a busy machine a task timed out after its sink
 * events went out, and the worker's onEvent stream repeated the run's first four events). Forced here, with no
 * timing luck: the worker's onEvent holds the run's first event until the server has recorded the task's timeout
 * (the worker sends an activation's completion only once its sinks have returned), so the late completion is
 * refused and the task runs again. What the test then reads from the system: the timeout in history, each
 * repeated event delivered to onEvent with the same eventId and the same content, and `handle.events()` (and the
 * tap's SSE under it) giving every event once.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentEvent, AgentEventRef } from "../../src/shared/contracts.js";
import { eventTrace, fauxModel, testWorker, uniqueId, within, withServer } from "../support/helpers.js";
import { waitFor } from "../support/crash/harness.js";

const env = withServer();

describe("a retried workflow task's events", () => {
  it("reach onEvent twice with one eventId, and handle.events() once", async () => {
    const workflowId = uniqueId("repeats");
    const timedOut = async () =>
      (await env.client.workflow.getHandle(workflowId).fetchHistory()).events?.some(
        (e) => e.workflowTaskTimedOutEventAttributes,
      ) ?? false;
    const delivered: { event: AgentEvent; ref: AgentEventRef }[] = [];
    let held = false;
    const faux = fauxModel([fauxAssistantMessage("Hello there")]);
    const { worker, taskQueue } = await testWorker(env, [], {
      onEvent: async (event, ref) => {
        if (ref.workflowId !== workflowId) return;
        delivered.push({ event: JSON.parse(JSON.stringify(event)) as AgentEvent, ref });
        if (held) return;
        // The run's first event: hold its workflow task's completion until the server timed the task out.
        held = true;
        await waitFor(timedOut, 60_000, "the first workflow task's timeout in history");
      },
    });
    const events = worker.events!;
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "Hi",
      workflowTaskTimeout: "2s",
    });
    const followed = (async () => {
      const got: { id: string; event: AgentEvent }[] = [];
      for await (const { id, event } of handle.events({ url: events.url, token: events.token }))
        got.push({ id, event });
      return got;
    })();
    const result = await worker.runUntil(async () => {
      const r = await handle.result();
      const got = await within(followed, 60_000, "handle.events() to end");
      // Under it, the tap: the raw SSE stream of the run, read while the worker serves it.
      const res = await fetch(`${events.url}/runs/${encodeURIComponent(workflowId)}/events`, {
        headers: { accept: "text/event-stream", authorization: `Bearer ${events.token}` },
      });
      return { result: r, followed: got, sse: await res.text() };
    });
    expect(result.result.stopReason).toBe("stop");
    expect(await timedOut()).toBe(true);

    // onEvent got the retried task's events twice: same id, the same event but for the workflow's clock (a
    // prompt's timestamp is the time of the task that entered it: the retried one's is the one history keeps).
    const byId = new Map<string, AgentEvent[]>();
    for (const { event, ref } of delivered) byId.set(ref.eventId, [...(byId.get(ref.eventId) ?? []), event]);
    const repeated = [...byId.entries()].filter(([, copies]) => copies.length > 1);
    expect(repeated.length).toBeGreaterThanOrEqual(1);
    const clockless = (event: AgentEvent) =>
      JSON.parse(JSON.stringify(event).replace(/"timestamp":\d+/g, '"timestamp":0'));
    for (const [, copies] of repeated) for (const copy of copies) expect(clockless(copy)).toEqual(clockless(copies[0]));
    // They are the run's first events, numbered by its workflow code from 0.
    const runId = delivered[0].ref.runId;
    expect(repeated.map(([id]) => id.split(".")[0])).toEqual(repeated.map((_, i) => `${runId}/${i}`));
    expect(repeated[0][1][0]).toEqual({ type: "agent_start" });

    // Deduplicated by id, onEvent's stream is the run's events in order, once.
    const seen = new Set<string>();
    const unique = delivered.filter(({ ref }) => !seen.has(ref.eventId) && seen.add(ref.eventId));
    const expected = [
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ];
    expect(eventTrace(unique.map((d) => d.event))).toEqual(expected);

    // handle.events(): each event once, with the id onEvent got, in onEvent's (deduplicated) order.
    const got = result.followed;
    expect(new Set(got.map((g) => g.id)).size).toBe(got.length);
    expect(got.map((g) => g.id)).toEqual(unique.map((d) => d.ref.eventId));
    expect(eventTrace(got.map((g) => g.event))).toEqual(expected);

    // Under it, the tap kept each once: the raw SSE stream repeats no eventId either.
    const ids = [...result.sse.matchAll(/^data: (\{.*\})$/gm)]
      .map((m) => (JSON.parse(m[1]) as { eventId?: string }).eventId)
      .filter((id) => id !== undefined);
    expect(ids).toEqual(unique.map((d) => d.ref.eventId));
  }, 120_000);
});
