/**
 * Model calls go where the context is (issue 17): a run's model calls are sent
 * to the own task queue of the worker that answered the last one, so they hit
 * its cache whatever the number of workers; tools stay on the shared queue; a
 * worker whose own queue is gone costs the call a schedule-to-start timeout,
 * then any worker takes it.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxText, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { replayHistory } from "../../src/worker/replay.js";
import { ROUTED_SCHEDULE_TO_START, routedScheduleToStartMs, taskLost } from "../../src/workflows/model-call.js";
import { deferred, fauxModel, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();

const TURNS = 6;

/** Answers from the context: a tool call per turn until TURNS results, then the count. */
const answer = (context: Context) => {
  const done = context.messages.filter((m) => m.role === "toolResult").length;
  return done >= TURNS
    ? fauxAssistantMessage(`read ${done}`)
    : fauxAssistantMessage([fauxToolCall("page", { n: done + 1 }, { id: `p${done + 1}` })], { stopReason: "toolUse" });
};

const pageTool = (gate?: (n: number) => Promise<void>): AgentTool => ({
  name: "page",
  description: "a page",
  parameters: Type.Object({ n: Type.Number() }),
  async execute(_id, args: any) {
    await gate?.(args.n);
    return { content: [{ type: "text", text: `page ${args.n} ${"x".repeat(4000)}` }] };
  },
});

/** Task queues of the scheduled activities of a run, by activity type, in order. */
async function scheduledQueues(handle: AgentRunHandle) {
  const history = await handle.workflow.fetchHistory();
  return (history.events ?? [])
    .map((e) => e.activityTaskScheduledEventAttributes)
    .filter(Boolean)
    .map((a) => ({ type: a!.activityType?.name as string, queue: a!.taskQueue?.name as string }));
}

/** Starts a run of the scripted model on `taskQueue` (its workflow id named after the queue, which is unique). */
const startRun = (taskQueue: string, faux: ReturnType<typeof fauxModel>) =>
  startAgentRun(env.client, { taskQueue, workflowId: `${taskQueue}-run`, model: faux.getModel(), prompt: "go" });

describe("model-call routing", () => {
  it("after the first call, every model call goes to the own queue of the worker that holds the context, and hits its cache", async () => {
    // (Several worker processes on one queue: `npm run bench -- scale`; Temporal allows one worker per queue per process.)
    const taskQueue = uniqueId("route");
    const faux = fauxModel(Array.from({ length: TURNS + 1 }, () => answer));
    const { worker } = await testWorker(env, [pageTool()], { taskQueue, models: [faux.getModel()] });
    expect(worker.ownTaskQueue).toMatch(new RegExp(`^${taskQueue}@`));
    const handle = await startRun(taskQueue, faux);
    const result = await worker.runUntil(() => handle.result());
    expect(textOf(result.messages.at(-1))).toBe(`read ${TURNS}`);

    const queues = await scheduledQueues(handle);
    const model = queues.filter((q) => q.type === "streamAssistantMessage").map((q) => q.queue);
    expect(model).toEqual([taskQueue, ...Array.from({ length: TURNS }, () => worker.ownTaskQueue)]);
    // Tools stay on the shared queue.
    expect(queues.filter((q) => q.type === "executeTool").every((q) => q.queue === taskQueue)).toBe(true);
    expect(worker.cacheStats()).toMatchObject({ hits: TURNS, misses: 0, queries: 0 });
  });

  it(`a worker whose own queue is gone: the call waits ${ROUTED_SCHEDULE_TO_START} for it, then goes to the shared queue and the run goes on`, async () => {
    const taskQueue = uniqueId("route-lost");
    const faux = fauxModel(Array.from({ length: TURNS + 2 }, () => answer));
    const released = deferred();
    const reached = deferred();
    const gate = async (n: number) => {
      if (n !== 2) return;
      reached.resolve();
      await released.promise;
    };
    const { worker } = await testWorker(env, [pageTool(gate)], { taskQueue, models: [faux.getModel()] });
    const handle = await startRun(taskQueue, faux);
    const result = await worker.runUntil(async () => {
      await reached.promise;
      // The worker's own poller stops (as if that worker died); its shared one keeps serving workflow tasks and tools.
      worker.ownWorker!.shutdown();
      released.resolve();
      return handle.result();
    });
    expect(textOf(result.messages.at(-1))).toBe(`read ${TURNS}`);
    const history = await handle.workflow.fetchHistory();
    const timedOut = (history.events ?? []).filter((e) => e.activityTaskTimedOutEventAttributes);
    expect(timedOut).toHaveLength(1);
    expect(timedOut[0].activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType).toBe(2); // SCHEDULE_TO_START
    const model = (await scheduledQueues(handle))
      .filter((q) => q.type === "streamAssistantMessage")
      .map((q) => q.queue);
    // Calls 1-2 as before, call 3 sent to the gone queue, then again on the shared queue, and the rest shared (the worker names no queue now).
    expect(model.slice(0, 4)).toEqual([taskQueue, worker.ownTaskQueue, worker.ownTaskQueue, taskQueue]);
    expect(model.slice(4).every((q) => q === taskQueue)).toBe(true);
    // Routed calls, the timeout and the fallback replay deterministically.
    const replayed = await replayHistory(history, "route-lost", env.bundle);
    expect(replayed.error).toBeUndefined();
  });

  it("a tool call run again after its worker stopped: the run's next model call goes to the shared queue, not to a worker that may be gone", async () => {
    const taskQueue = uniqueId("route-retried-tool");
    const faux = fauxModel(Array.from({ length: TURNS + 2 }, () => answer));
    let frozen = false;
    const freezeOnce = async (n: number) => {
      if (n !== 2 || frozen) return;
      frozen = true;
      // The worker freezes past the tool's heartbeat timeout (no timer, no heartbeat): the server runs the call again.
      const until = Date.now() + 3500;
      while (Date.now() < until) {
        /* frozen */
      }
    };
    const tool = { ...pageTool(freezeOnce), activity: { heartbeatTimeout: "1s" } };
    const { worker } = await testWorker(env, [tool], { taskQueue, models: [faux.getModel()] });
    const handle = await startRun(taskQueue, faux);
    const result = await worker.runUntil(() => handle.result());
    expect(textOf(result.messages.at(-1))).toBe(`read ${TURNS}`);
    const history = await handle.workflow.fetchHistory();
    const page2 = (history.events ?? []).find(
      (e) => e.activityTaskStartedEventAttributes && (e.activityTaskStartedEventAttributes.attempt ?? 1) > 1,
    );
    expect(page2).toBeDefined();
    const model = (await scheduledQueues(handle))
      .filter((q) => q.type === "streamAssistantMessage")
      .map((q) => q.queue);
    // Call 1 shared, call 2 routed; tool call 2 ran twice, so call 3 goes to the shared queue; its worker is the home again.
    expect(model.slice(0, 4)).toEqual([taskQueue, worker.ownTaskQueue, taskQueue, worker.ownTaskQueue]);
    const replayed = await replayHistory(history, "route-retried-tool", env.bundle);
    expect(replayed.error).toBeUndefined();
  });

  it("a workflow task that starts just past its timeout after a tool finished (the worker that held the run is gone): the next model call goes to the shared queue at once", async () => {
    // Lost: past the task timeout, but by no more than 3 s, in a run whose last task started within 1 s.
    expect(taskLost(2200, 50, 2000)).toBe(true);
    expect(taskLost(6700, 500, 5000)).toBe(true);
    expect(taskLost(1900, 50, 2000)).toBe(false);
    // A saturated fleet: a slow last task, or a task later than any death explains; and no last task, no telling.
    expect(taskLost(6000, 3000, 5000)).toBe(false);
    expect(taskLost(36_000, 500, 5000)).toBe(false);
    expect(taskLost(6000, undefined, 5000)).toBe(false);
    const taskQueue = uniqueId("route-task-lost");
    const faux = fauxModel(Array.from({ length: TURNS + 2 }, () => answer));
    const reached = deferred();
    let releasedAt = 0;
    const gate = async (n: number) => {
      if (n !== 2) return;
      reached.resolve();
      await new Promise((r) => setTimeout(r, 100));
      releasedAt = Date.now();
    };
    const first = (await testWorker(env, [pageTool(gate)], { taskQueue, models: [faux.getModel()] })).worker;
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: `${taskQueue}-run`,
      model: faux.getModel(),
      prompt: "go",
      workflowTaskTimeout: "2s",
    });
    // The first worker finishes tool call 2 and stops before it takes the workflow task that follows: that task
    // starts when the second worker does, 2.5 s after the tool finished (as when a worker took it and died: its
    // timeout, then another worker), and the first worker's own queue, where the run's model calls go, is gone.
    await first.runUntil(() => reached.promise);
    const second = (await testWorker(env, [pageTool()], { taskQueue, models: [faux.getModel()] })).worker;
    await new Promise((r) => setTimeout(r, Math.max(0, releasedAt + 2500 - Date.now())));
    const result = await second.runUntil(() => handle.result());
    expect(textOf(result.messages.at(-1))).toBe(`read ${TURNS}`);
    const history = await handle.workflow.fetchHistory();
    const model = (await scheduledQueues(handle))
      .filter((q) => q.type === "streamAssistantMessage")
      .map((q) => q.queue);
    // Call 3 does not wait out a schedule-to-start timeout on the first worker's queue: it goes to the shared one.
    expect(model.slice(0, 4)).toEqual([taskQueue, first.ownTaskQueue, taskQueue, second.ownTaskQueue]);
    expect((history.events ?? []).filter((e) => e.activityTaskTimedOutEventAttributes)).toHaveLength(0);
    const replayed = await replayHistory(history, "route-task-lost", env.bundle);
    expect(replayed.error).toBeUndefined();
  });

  it("a busy worker keeps its runs' calls: a routed call waits 2w + 1 s for it when the last one waited w in its queue", async () => {
    expect([undefined, 0, 400, 1500, 60_000].map((w) => routedScheduleToStartMs(w))).toEqual([
      2000, 2000, 2000, 4000, 30_000,
    ]);
    // Never longer than the call's heartbeat timeout (a started call on a dead worker is given up after it), nor under 2 s.
    expect([undefined, 1500, 60_000].map((w) => routedScheduleToStartMs(w, 5000))).toEqual([2000, 4000, 5000]);
    expect(routedScheduleToStartMs(60_000, 1000)).toBe(2000);
    expect(routedScheduleToStartMs(60_000, 600_000)).toBe(30_000);
    // Nor, when it is longer, than the worker's sticky queue timeout: its runs' workflow tasks wait that long for it.
    expect([1500, 60_000].map((w) => routedScheduleToStartMs(w, 5000, 10_000))).toEqual([4000, 10_000]);
    expect(routedScheduleToStartMs(60_000, 5000, 1000)).toBe(5000);
    expect(routedScheduleToStartMs(60_000, 5000, 600_000)).toBe(30_000);
    // One activity slot per poller and three runs whose model calls stream for ~0.5 s: calls queue behind each other.
    const taskQueue = uniqueId("route-busy");
    const slowAnswer = (context: Context) => {
      const done = context.messages.filter((m) => m.role === "toolResult").length;
      return done >= 3
        ? fauxAssistantMessage(`read ${done}`)
        : fauxAssistantMessage([fauxText("reading ".repeat(15)), fauxToolCall("page", { n: done + 1 })], {
            stopReason: "toolUse",
          });
    };
    const faux = fauxModel(
      Array.from({ length: 3 * 4 }, () => slowAnswer),
      { tokensPerSecond: 60 },
    );
    const { worker } = await testWorker(env, [pageTool()], {
      taskQueue,
      models: [faux.getModel()],
      // A sticky timeout under the third run's heartbeat timeout, so that one bounds its calls.
      workerOptions: { maxConcurrentActivityTaskExecutions: 1, stickyQueueScheduleToStartTimeout: "1s" },
    });
    const handles = await Promise.all(
      [1, 2, 3].map((i) =>
        startAgentRun(env.client, {
          taskQueue,
          workflowId: uniqueId(`busy-${i}`),
          model: faux.getModel(),
          prompt: "go",
          // The third run's calls give up on their worker after its 2.5 s heartbeat timeout at most.
          ...(i === 3 ? { modelActivity: { heartbeatTimeout: "2500ms" } } : {}),
        }),
      ),
    );
    await worker.runUntil(() => Promise.all(handles.map((h) => h.result())));
    const checked: { waitMs: number; timeoutMs: number; heartbeatMs?: number; stickyMs?: number }[] = [];
    for (const [i, handle] of handles.entries()) {
      const events = (await handle.workflow.fetchHistory()).events ?? [];
      let lastWait: number | undefined;
      let lastSticky: number | undefined;
      for (const e of events) {
        const scheduled = e.activityTaskScheduledEventAttributes;
        if (
          scheduled?.activityType?.name === "streamAssistantMessage" &&
          scheduled.taskQueue?.name === worker.ownTaskQueue
        ) {
          const t = scheduled.scheduleToStartTimeout!;
          checked.push({
            waitMs: lastWait!,
            timeoutMs: Number(t.seconds ?? 0) * 1000 + Math.round((t.nanos ?? 0) / 1e6),
            heartbeatMs: i === 2 ? 2500 : undefined,
            stickyMs: lastSticky,
          });
        }
        const done = e.activityTaskCompletedEventAttributes?.result?.payloads?.[0];
        if (done) {
          const reply = JSON.parse(Buffer.from(done.data!).toString()) as { queueWaitMs?: number; stickyMs?: number };
          if (reply.queueWaitMs !== undefined) [lastWait, lastSticky] = [reply.queueWaitMs, reply.stickyMs];
        }
      }
    }
    expect(checked.length).toBeGreaterThan(0);
    // The worker named its sticky timeout in each routed reply.
    expect(checked.every((c) => c.stickyMs === 1000)).toBe(true);
    for (const c of checked) expect(c.timeoutMs).toBe(routedScheduleToStartMs(c.waitMs, c.heartbeatMs, c.stickyMs));
    expect(checked.filter((c) => c.heartbeatMs).every((c) => c.timeoutMs <= 2500)).toBe(true);
    // Some calls did wait behind the others, and got more than the 2 s a dead worker gets.
    expect(checked.some((c) => c.timeoutMs > 2000)).toBe(true);
  });

  it("routing off: every model call stays on the shared queue", async () => {
    const taskQueue = uniqueId("route-off");
    const faux = fauxModel(Array.from({ length: TURNS + 1 }, () => answer));
    const { worker } = await testWorker(env, [pageTool()], {
      taskQueue,
      models: [faux.getModel()],
      routeModelCalls: false,
    });
    expect(worker.ownTaskQueue).toBeUndefined();
    const handle = await startRun(taskQueue, faux);
    await worker.runUntil(() => handle.result());
    const model = (await scheduledQueues(handle)).filter((q) => q.type === "streamAssistantMessage");
    expect(model.every((q) => q.queue === taskQueue)).toBe(true);
    expect(worker.cacheStats()).toMatchObject({ hits: TURNS, misses: 0 });
  });
});
