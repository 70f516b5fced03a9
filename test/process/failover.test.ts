/**
 * Fast failover (issue 17): a worker's presence workflow heartbeats what it has in hand; when a worker is killed,
 * a survivor fails its calls by id and clears its runs' sticky queues at once, instead of each run waiting out
 * its own heartbeat timeout. Real worker processes, real `kill -9` and SIGSTOP; the runs use a 60 s model
 * heartbeat, so a run that goes on within the test's time was moved by the failover, and the history says so.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import proto from "@temporalio/proto";
import type { AgentRunHandle } from "../../src/client.js";
import { MockActivityEnvironment } from "@temporalio/testing";
import {
  createPresenceActivities,
  fleetTaskQueue,
  presenceTimeoutMs,
  tellWorkerLost,
  WorkerPresence,
  WORKER_PRESENCE_WORKFLOW,
  type PresenceOutcome,
} from "../../src/failover/presence.js";
import type { FailoverResult, PresenceReport } from "../../src/failover/types.js";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "@temporalio/worker";
import { readHistoryFile, replayOptions } from "../../src/replay.js";
import { workerLostSignal } from "../../src/failover/presence-workflow.js";
import { fastFailover } from "../../src/failover/index.js";
import {
  harnessDir,
  readLog,
  startChildWorker,
  startScenarioRun,
  waitFor,
  type ChildWorker,
  type HarnessConfig,
  type HarnessDir,
  type LogEntry,
} from "../support/crash/harness.js";
import { createAgentWorker, type AgentWorker } from "../../src/worker.js";
import type { WorkflowHandle } from "@temporalio/client";
import { openTestEnv, textOf, uniqueId, type TestEnv } from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";

const FINAL =
  "Final answer after 5 results: fast:fast(a) ok, fast:fast(b) ok, slow:slow(c) ok, write:write(d) ok, fast:fast(e) ok";

let env: TestEnv;
let files: HarnessDir;
const children: ChildWorker[] = [];

beforeAll(async () => {
  env = await openTestEnv();
  files = await harnessDir("failover", { failover: true });
}, 60000);

afterAll(async () => {
  await Promise.all(children.map((c) => c.kill().catch(() => {})));
  await env?.close();
  await files?.remove();
});

const config = (variant?: HarnessConfig["variant"]) =>
  files.config(variant, {
    // Under a whole suite's load a short timeout could take a live worker for dead; the mechanism is the same.
    presenceTimeout: "3s",
    // Turn 2's answer streams for ~6 s: long enough to be cut, also when a loaded suite is slow to see it reported.
    tokensPerSecond: 10,
  });

async function child(c: HarnessConfig): Promise<ChildWorker> {
  const worker = await startChildWorker(c);
  children.push(worker);
  return worker;
}

/** The scenario's run with a model heartbeat far longer than the test waits: only a failover moves it in time. */
const startRun = (c: HarnessConfig) =>
  startScenarioRun(env.client, c, { heartbeatTimeout: "60s", workflowTaskTimeout: "2s" });

/** Turn 2's model call has started on worker `pid` (routed there: it holds the run's context); it streams ~6 s. */
const turn2On = (log: LogEntry[], pid: number) =>
  log.some((e) => e.event === "model_call" && e.results === 3 && e.pid === pid);

/**
 * The worker's running presence has heartbeated a report naming a call of `workflowId` (the server holds it as the
 * activity's last heartbeat details): a kill from now on is one the fail-over can name the call for. Read from the
 * server, not waited for: under a whole suite's load the heartbeat can come later than any fixed wait.
 */
async function reported(worker: ChildWorker, workflowId: string) {
  await waitFor(
    async () => ((await reportOf(worker))?.calls ?? []).some((call) => call.workflowId === workflowId),
    30000,
    "the first worker's presence to report its model call",
  );
}

/** The last report the worker's running presence heartbeated, as the server holds it. */
async function reportOf(worker: ChildWorker): Promise<PresenceReport | undefined> {
  // Not started yet: no report.
  const described = await presenceOf(worker)
    .describe()
    .catch(() => undefined);
  const pending = described?.raw.pendingActivities?.[0];
  const data = pending?.heartbeatDetails?.payloads?.[0]?.data;
  return pending?.state === 2 && data ? (JSON.parse(Buffer.from(data).toString()) as PresenceReport) : undefined;
}

/**
 * The scenario's run with two workers, the first one in turn 2's model call (~6 s of streaming) and its presence
 * having reported it: the first worker alone until it holds the run's context (turn 1's answer), then the survivor.
 */
async function firstWorkerInTurn2(extra: Partial<HarnessConfig> = {}) {
  const c = { ...config(), ...extra };
  const first = await child(c);
  const handle = await startRun(c);
  await waitFor(() => readLog(c.logFile).some((e) => e.event === "tool_start"), 30000, "turn 1's tools");
  const second = await child(c);
  await waitFor(() => turn2On(readLog(c.logFile), first.pid), 30000, "turn 2's model call on the first worker");
  await reported(first, handle.workflowId);
  return { c, first, second, handle };
}

/**
 * How each model call of the run ended: its queue and, when it or an attempt of it failed, the failure (a retried
 * attempt's shows only as the last attempt's `lastFailure`).
 */
async function modelCalls(handle: AgentRunHandle) {
  const events = (await handle.workflow.fetchHistory()).events ?? [];
  return events
    .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage")
    .map((s) => {
      const failed =
        events.find((e) => Number(e.activityTaskFailedEventAttributes?.scheduledEventId) === Number(s.eventId))
          ?.activityTaskFailedEventAttributes?.failure ??
        events.find((e) => Number(e.activityTaskStartedEventAttributes?.scheduledEventId) === Number(s.eventId))
          ?.activityTaskStartedEventAttributes?.lastFailure ??
        undefined;
      const timedOut = events.some(
        (e) => Number(e.activityTaskTimedOutEventAttributes?.scheduledEventId) === Number(s.eventId),
      );
      return {
        queue: s.activityTaskScheduledEventAttributes!.taskQueue!.name!,
        failure: failed ? { message: failed.message, timeout: failed.timeoutFailureInfo?.timeoutType } : undefined,
        timedOut,
      };
    });
}

const presenceOf = (worker: ChildWorker, attempt = 1) =>
  env.client.workflow.getHandle(`jai-presence-${worker.ownQueue}-${attempt}`);

/** The worker's presence activity of `attempt` runs (heartbeats): it is watched. */
const watched = async (worker: ChildWorker, attempt: number) =>
  (
    await presenceOf(worker, attempt)
      .describe()
      .catch(() => undefined)
  )?.raw.pendingActivities?.[0]?.state === 2; // STARTED

describe("fast failover", () => {
  it("kill -9 mid model call: a survivor fails the dead worker's call by id and the run goes on", async () => {
    const { c, first, second, handle } = await firstWorkerInTurn2();
    await first.kill();

    const outcome = (await presenceOf(first).result()) as PresenceOutcome;
    expect(outcome.worker).toBe("lost");
    // Its call is failed by this fail-over, or before it by the survivor its link told (below, in the history).
    expect(outcome.failover!.runsUnstuck).toBeGreaterThanOrEqual(1);
    expect(outcome.failover!.queueAdopted).toBe(true);

    const result = await handle.result();
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe(FINAL);
    // The dead worker's call failed with the failover's heartbeat timeout (the server's own would take 60 s and
    // say nothing of a worker). Routed to it, its redo went to the shared queue; on the shared queue (a loaded
    // suite's late workflow task can send the run there, see routing.ts taskLost) it was retried in place.
    const calls = await modelCalls(handle);
    const lost = calls.findIndex((m) => m.failure?.message === `worker ${first.ownQueue} stopped heartbeating`);
    expect({ lost: lost >= 0, calls }).toMatchObject({ lost: true });
    expect(calls[lost].failure!.timeout).toBe(proto.temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
    if (calls[lost].queue === first.ownQueue) expect(calls[lost + 1].queue).toBe(c.taskQueue);
    else expect(calls[lost].queue).toBe(c.taskQueue);
    expect(calls.some((m) => m.timedOut)).toBe(false);
    // The survivor is still watched.
    await expect(presenceOf(second).describe()).resolves.toMatchObject({ status: { name: "RUNNING" } });
    await second.stop();
  }, 90000);

  it("a worker paused past its presence timeout is failed over, and watched again once it resumes", async () => {
    // Without links: with them, a hung worker has 60 s to answer its ping, and its call's own heartbeat timeout
    // comes first (the patience is tested below, "a linked worker slow to answer its ping").
    const { first, second, handle } = await firstWorkerInTurn2({ links: false });
    first.pause();
    const outcome = (await presenceOf(first).result()) as PresenceOutcome;
    expect(outcome.worker).toBe("lost");
    first.resume();
    // Its presence is gone: it starts another, and the server refuses the result of the call it was cut off in.
    await waitFor(() => watched(first, 2), 30000, "the resumed worker's new presence (its watchdog starts one)");
    const result = await handle.result();
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe(FINAL);
    const calls = await modelCalls(handle);
    // Its call failed as its worker's (by the fail-over, or by a survivor's link); the list is printed when not.
    expect(calls).toContainEqual(
      expect.objectContaining({
        failure: expect.objectContaining({ message: `worker ${first.ownQueue} stopped heartbeating` }),
      }),
    );
    // A worker that shuts down ends its presence (the survivor runs the workflow's last task): no failover.
    await first.stop();
    expect(((await presenceOf(first, 2).result()) as PresenceOutcome).worker).toBe("stopped");
    await second.stop();
  }, 120000);
});

describe("fast failover: links", () => {
  it("kill -9: the survivor's link closes and nothing listens at the dead worker's address: it is failed over at once, not after its presence timeout", async () => {
    // A presence timeout longer than the test: only the link can tell in time.
    const c = files.config(undefined, { presenceTimeout: "60s", tokensPerSecond: 10 });
    const first = await child(c);
    const handle = await startRun(c);
    await waitFor(() => readLog(c.logFile).some((e) => e.event === "tool_start"), 30000, "turn 1's tools");
    const second = await child(c);
    await waitFor(() => turn2On(readLog(c.logFile), first.pid), 30000, "turn 2's model call on the first worker");
    await reported(first, handle.workflowId);
    await waitFor(
      async () => ((await reportOf(second))?.links ?? []).includes(first.ownQueue),
      30000,
      "the survivor's link to the first worker",
    );
    await first.kill();
    const outcome = (await presenceOf(first).result()) as PresenceOutcome;
    expect(outcome).toMatchObject({ worker: "lost", lostBy: "link" });
    const result = await handle.result();
    expect(textOf(result.messages.at(-1))).toBe(FINAL);
    const calls = await modelCalls(handle);
    // The report came from the server (no timeout carried it): the call it named failed as its worker's, by the
    // survivor the link told or by the presence's fail-over; the list is printed when not.
    expect(calls).toContainEqual(
      expect.objectContaining({
        failure: expect.objectContaining({ message: `worker ${first.ownQueue} stopped heartbeating` }),
      }),
    );
    await second.stop();
  }, 90000);
});

describe("fast failover: a live worker", () => {
  it("whose heartbeats stop but that answers its ping is not failed over, and is watched again", async () => {
    const { first, second, handle } = await firstWorkerInTurn2();
    // Frozen until its presence has given up on its heartbeats and pings it; thawed, it answers the ping.
    first.pause();
    const presence = presenceOf(first);
    await pinged(presence, 30000);
    first.resume();
    const resumedAt = Date.now();
    expect(((await presence.result()) as PresenceOutcome).worker).toBe("alive");
    await waitFor(() => watched(first, 2), 30000, "its new presence");
    // Started as soon as the worker heard its presence activity was given up, not by its watchdog (10 s unwatched
    // first): a worker killed meanwhile would not be failed over at all.
    const restartedAt = (await presenceOf(first, 2).describe()).startTime.getTime();
    expect(restartedAt - resumedAt).toBeLessThan(10000);
    const result = await handle.result();
    expect(textOf(result.messages.at(-1))).toBe(FINAL);
    // Its call was not failed: it streamed on, and the run's turn 2 answer came from it.
    expect((await modelCalls(handle)).some((m) => m.failure)).toBe(false);
    await first.stop();
    await second.stop();
  }, 90000);
});

describe("fast failover: the dead worker's queue", () => {
  it("a run that held its context there sends its next model call there: the survivor that failed it over takes it at once", async () => {
    const c = config("approval");
    const first = await child(c);
    const handle = await startRun(c);
    await waitFor(async () => (await handle.state()).status === "waiting_for_approval", 30000, "the approval");
    const second = await child(c);
    await waitFor(() => watched(second, 1), 20000, "the survivor's presence");
    await first.kill();
    const outcome = (await presenceOf(first).result()) as PresenceOutcome;
    expect(outcome).toMatchObject({ worker: "lost", failover: { queueAdopted: true } });
    // The run does not know: its next model call goes to the dead worker's queue, and is taken there.
    await handle.approve("t1-g");
    const result = await handle.result();
    expect(result.stopReason).toBe("stop");
    const calls = await modelCalls(handle);
    expect(calls.map((m) => m.queue)).toEqual([c.taskQueue, first.ownQueue]);
    expect(calls[1]).toMatchObject({ failure: undefined, timedOut: false });
    await second.stop();
  }, 90000);
});

describe("what a worker reports", () => {
  it("lists the calls in hand and the runs seen lately, newest kept, forgotten ones dropped", () => {
    const presence = new WorkerPresence("q@w", 1000);
    presence.callStarted({ workflowId: "w1", runId: "r1", activityId: "1", attempt: 1 });
    presence.callStarted({ workflowId: "w2", runId: "r2", activityId: "7", attempt: 2 });
    presence.callEnded({ workflowId: "w1", runId: "r1", activityId: "1", attempt: 1 });
    presence.runSeen("w1", "r1");
    presence.runSeen("w2", "r2");
    presence.runSeen("w1", "r1"); // seen again: now the newest
    const now = Date.now();
    expect(presence.report(now)).toEqual({
      links: [],
      linkedBy: 0,
      calls: [{ workflowId: "w2", runId: "r2", activityId: "7", attempt: 2 }],
      runs: [
        { workflowId: "w2", runId: "r2" },
        { workflowId: "w1", runId: "r1" },
      ],
    });
    // A minute on, nothing seen since: the runs have moved, or wait with no workflow task due.
    expect(presence.report(now + 61 * 1000).runs).toEqual([]);
    // Bounded without reports too (no presence runs once its queue's worker stopped): the newest 1,000 kept.
    for (let i = 0; i < 1500; i++) presence.runSeen(`w${i}`, `r${i}`);
    const held = presence.recentRuns(Infinity);
    expect(held).toHaveLength(1000);
    expect(held[0]).toEqual({ workflowId: "w500", runId: "r500" });
    expect(WORKER_PRESENCE_WORKFLOW).toBe("agentWorkerPresence");
    // A zero timeout would turn the heartbeat timeout off, and the watch with it; under two beats' throttle, too short.
    expect(() => presenceTimeoutMs("0s")).toThrow(RangeError);
    expect(() => presenceTimeoutMs("100ms")).toThrow(RangeError);
    expect(presenceTimeoutMs("250ms")).toBe(250);
    expect(presenceTimeoutMs(undefined)).toBe(1000);
  });

  it("names one first survivor of a dead worker: the first by queue name of the others the listing holds", () => {
    const peer = (workerQueue: string) => ({
      workerQueue,
      address: { host: "127.0.0.1", port: 1 },
      presenceWorkflowId: `jai-presence-${workerQueue}-1`,
    });
    const [a, b, c] = ["a@w", "b@w", "c@w"].map((q) => new WorkerPresence(q, 1000, false));
    // Each listing holds every running presence, this worker's own included: it is left out.
    for (const p of [a, b, c]) p.listed([peer("a@w"), peer("b@w"), peer("c@w")]);
    expect([a, b, c].map((p) => p.firstSurvivor("a@w"))).toEqual([false, true, false]);
    expect([a, b, c].map((p) => p.firstSurvivor("b@w"))).toEqual([true, false, false]);
    expect([a, b, c].map((p) => p.firstSurvivor("c@w"))).toEqual([true, false, false]);
  });

  it("starts a new presence as soon as its last was given up, but never two within 5 s", async () => {
    const presence = new WorkerPresence(uniqueId("restarts"), 1000, false);
    presence.watch(env.client, uniqueId("restarts-shared"));
    const started = (n: number) =>
      env.client.workflow
        .getHandle(`jai-presence-${presence.workerQueue}-${n}`)
        .describe()
        .then(
          () => true,
          () => false,
        );
    try {
      await waitFor(() => started(1), 10000, "its first presence");
      const firstAt = Date.now();
      // Given up at once, twice (an overloaded worker late on every heartbeat): one restart, put off.
      presence.givenUp();
      presence.givenUp();
      await new Promise((r) => setTimeout(r, 1000));
      expect(await started(2)).toBe(false);
      await waitFor(() => started(2), 10000, "the restart put off");
      expect(Date.now() - firstAt).toBeGreaterThanOrEqual(4000);
      expect(await started(3)).toBe(false);
      // Given up 5 s after the last start: a new one starts at once.
      presence.givenUp(Date.now() + 5000);
      await waitFor(() => started(3), 3000, "the restart at once");
    } finally {
      presence.unwatch();
      for (const n of [1, 2, 3])
        await env.client.workflow
          .getHandle(`jai-presence-${presence.workerQueue}-${n}`)
          .terminate()
          .catch(() => {});
    }
  }, 30000);

  it("trusts a dead worker's identities only where they name it alone: never this worker's own", () => {
    const presence = new WorkerPresence("q@w", 1000, false);
    presence.identities = ["1@host"];
    // A fleet given one identity for all its workers: failing "its" calls would fail the living's.
    expect(presence.deadIdentities(["1@host", "2@host"], "dead@w")).toEqual(["2@host"]);
    expect(presence.deadIdentities(undefined, "dead@w")).toEqual([]);
  });
});

/**
 * An in-process fast-failover worker with `presenceTimeout`, running while `body` runs once its presence
 * activity runs; `running()` reads that activity as the server holds it.
 */
async function withPresence(
  name: string,
  presenceTimeout: string,
  body: (watched: {
    worker: AgentWorker;
    presence: WorkflowHandle;
    running: () => Promise<proto.temporal.api.workflow.v1.IPendingActivityInfo | undefined>;
  }) => Promise<void>,
  more: { secret?: string } = {},
) {
  const worker = await createAgentWorker({
    connection: env.connection,
    taskQueue: uniqueId(name),
    workflowBundle: env.bundle,
    extensions: [fastFailover({ presenceTimeout, ...more })],
  });
  await worker.runUntil(async () => {
    const presence = env.client.workflow.getHandle(`jai-presence-${worker.ownTaskQueue}-1`);
    const running = async () => (await presence.describe().catch(() => undefined))?.raw.pendingActivities?.[0];
    await waitFor(async () => (await running())?.state === 2, 20000, "the presence activity to run"); // STARTED
    await body({ worker, presence, running });
  });
}

/**
 * A fake worker `name` of `worker`'s fleet: its presence workflow starts with `timeoutMs`, and the test takes
 * its presence activity under `identity`, as a worker's poller would, and never answers unless it chooses to.
 */
async function fakeWorkerTakes(
  worker: AgentWorker,
  name: string,
  identity: string,
  timeoutMs: number,
  more: { linked?: boolean } = {},
) {
  const input = { workerQueue: name, presenceQueue: `${name}-presence`, timeoutMs, renewAfterMs: 600000, ...more };
  const presence = await env.client.workflow.start(WORKER_PRESENCE_WORKFLOW, {
    taskQueue: fleetTaskQueue(worker.taskQueue),
    workflowId: `jai-presence-${name}-1`,
    args: [input],
  });
  const take = () =>
    env.connection.workflowService.pollActivityTaskQueue({
      namespace: "default",
      taskQueue: { name: input.presenceQueue },
      identity,
    });
  const payload = (value: unknown) => ({
    payloads: [env.client.options.loadedDataConverter.payloadConverter.toPayload(value)],
  });
  type Task = { taskToken?: Uint8Array | null };
  /** Heartbeats `report` on a presence activity it took, as the worker would. */
  const beat = (task: Task, report: PresenceReport) =>
    env.connection.workflowService.recordActivityTaskHeartbeat({
      namespace: "default",
      taskToken: task.taskToken,
      details: payload(report),
      identity,
    });
  /** Completes an activity it took (a ping) with `result`. */
  const answer = (task: Task, result: unknown) =>
    env.connection.workflowService.respondActivityTaskCompleted({
      namespace: "default",
      taskToken: task.taskToken,
      result: payload(result),
      identity,
    });
  return { presence, take, beat, answer };
}

/** Resolves once `presence` has pinged its worker (its heartbeats stopped). */
const pinged = (presence: WorkflowHandle, ms: number) =>
  waitFor(
    async () =>
      ((await presence.fetchHistory()).events ?? []).some(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "workerPing",
      ),
    ms,
    "the ping",
  );

describe("a short presence timeout", () => {
  it("is kept by a live worker: it beats at least twice per timeout, so its presence never times out", async () => {
    await withPresence("short-presence", "400ms", async ({ presence, running }) => {
      // Beating every 500 ms against a 400 ms timeout, it timed out at once and ended "alive" after its ping.
      await new Promise((r) => setTimeout(r, 3000));
      const described = await presence.describe();
      expect(described.status.name).toBe("RUNNING");
      expect((await running())?.attempt).toBe(1);
    });
  }, 40000);
});

describe("news of a closed link", () => {
  it("that cannot say whether the worker is gone makes its presence ping it: a live worker answers and stays watched", async () => {
    await withPresence("link-closed", "30s", async ({ worker, presence, running }) => {
      // Two peers tell at once: one news reaches the workflow.
      const peer = {
        workerQueue: worker.ownTaskQueue!,
        address: { host: "127.0.0.1", port: 1 },
        presenceWorkflowId: presence.workflowId,
      };
      await tellWorkerLost(env.client, peer, { evidence: "closed", by: "peer 1" });
      await tellWorkerLost(env.client, peer, { evidence: "closed", by: "peer 2" });
      const pinged = async () =>
        ((await presence.fetchHistory()).events ?? []).filter(
          (e) =>
            e.activityTaskCompletedEventAttributes !== undefined && e.activityTaskCompletedEventAttributes !== null,
        ).length === 1;
      await waitFor(pinged, 20000, "the ping's answer");
      // Not failed over: the same presence, its activity still beating.
      await new Promise((r) => setTimeout(r, 500));
      expect((await presence.describe()).status.name).toBe("RUNNING");
      expect((await running())?.state).toBe(2);
      const signals = ((await presence.fetchHistory()).events ?? []).filter(
        (e) => e.workflowExecutionSignaledEventAttributes,
      );
      expect(signals).toHaveLength(1);
    });
  }, 40000);
});

describe("a report read from the server", () => {
  it("after the presence activity timed out (a link's news, then a fail-over slower than the presence timeout) comes from the timeout's details", async () => {
    await withPresence("timed-out-report", "30s", async ({ worker, presence }) => {
      // A fake worker's presence on the fleet: the test takes its activity, heartbeats one report and goes silent.
      const fake = uniqueId("fake-worker");
      const { presence: fakePresence, take, beat } = await fakeWorkerTakes(worker, fake, "fake-worker", 1000);
      // Nothing heartbeated yet: the fail-over says it found no report (the workflow then waits for the timeout's).
      const activities = createPresenceActivities(() => env.client, undefined);
      const failOver = async () =>
        (await new MockActivityEnvironment({
          workflowNamespace: "default",
          workflowExecution: { workflowId: fakePresence.workflowId, runId: fakePresence.firstExecutionRunId },
        }).run(activities.failOverWorker, { workerQueue: fake })) as FailoverResult;
      expect(await failOver()).toMatchObject({ runsUnstuck: 0, reportMissing: true });
      const task = await take();
      expect(task.activityType?.name).toBe("workerPresence");
      // It names a running run: the in-process worker's own presence, whose sticky queue a fail-over can clear.
      const { runId } = await presence.describe();
      await beat(task, { calls: [], runs: [{ workflowId: presence.workflowId, runId }] });
      // Silent from now on: the activity times out, the ping goes unanswered, the fleet fails the fake worker over.
      expect(((await fakePresence.result()) as PresenceOutcome).worker).toBe("lost");
      const timedOut = (await fakePresence.fetchHistory()).events?.some((e) => e.activityTaskTimedOutEventAttributes);
      expect(timedOut).toBe(true);
      // What a fail-over told by a link reads now: no activity is running, the timeout holds the report.
      const result = await failOver();
      expect(result.runsUnstuck).toBe(1);
      expect(result.reportMissing).toBeUndefined();
    });
  }, 60000);
});

describe("calls handed to a dying worker's last polls", () => {
  it("are failed by what the server says started them (its identities), though no report named them; others' are not", async () => {
    await withPresence("handed-calls", "30s", async ({ worker, presence, running }) => {
      // The presence names the identities the worker's pollers give the server (its peers read them there).
      const own = await running();
      expect((await presence.describe()).memo?.identities).toContain(own?.lastWorkerIdentity);
      // A call taken by a worker that died before reporting it: the test takes a fake worker's presence activity
      // under the dead worker's identity, and never answers.
      const fake = uniqueId("handed");
      const dead = `${fake}-identity`;
      const { presence: fakePresence, take } = await fakeWorkerTakes(worker, fake, dead, 60000);
      const task = await take();
      expect(task.activityType?.name).toBe("workerPresence");
      const report: PresenceReport = {
        calls: [],
        runs: [
          { workflowId: fakePresence.workflowId, runId: fakePresence.firstExecutionRunId },
          { workflowId: presence.workflowId, runId: (await presence.describe()).runId },
        ],
        identities: [dead],
      };
      const result = (await new MockActivityEnvironment({
        workflowNamespace: "default",
        workflowExecution: { workflowId: "failing-over", runId: "r" },
      }).run(createPresenceActivities(() => env.client, undefined).failOverWorker, {
        workerQueue: fake,
        report,
      })) as FailoverResult;
      // The dead identity's attempt failed as a heartbeat timeout would (the presence then pings and fails over);
      // the live worker's presence activity, in the same report, runs on.
      expect(result.callsFailed).toBe(1);
      const failed = (await fakePresence.fetchHistory()).events?.find((e) => e.activityTaskFailedEventAttributes);
      expect(failed?.activityTaskFailedEventAttributes?.failure?.message).toContain("stopped heartbeating");
      expect(await running()).toMatchObject({ state: 2, attempt: 1 });
      await fakePresence.terminate(); // its ping would wait a minute for the fake worker
    });
  }, 60000);

  it("are failed at once by each survivor a link told, for its own runs of the last seconds", async () => {
    await withPresence("handed-by-link", "30s", async ({ worker }) => {
      const fake = uniqueId("handed-link");
      const dead = `${fake}-identity`;
      // A presence timeout longer than the test waits: only the survivor's sweep can fail the call in time.
      const { presence: fakePresence, take } = await fakeWorkerTakes(worker, fake, dead, 60000);
      await take();
      // A survivor that ran a workflow task of that run a moment ago hears from its link that the worker is gone.
      const survivorQueue = uniqueId("survivor");
      const survivor = new WorkerPresence(survivorQueue, 1000, false);
      survivor.watch(env.client, uniqueId("survivor-shared"));
      try {
        survivor.runSeen(fakePresence.workflowId, fakePresence.firstExecutionRunId);
        survivor.peerLost(
          {
            workerQueue: fake,
            address: { host: "127.0.0.1", port: 1 },
            presenceWorkflowId: fakePresence.workflowId,
            identities: [dead],
          },
          "refused",
        );
        const failed = async () =>
          (await fakePresence.fetchHistory()).events?.some((e) =>
            e.activityTaskFailedEventAttributes?.failure?.message?.includes(`worker ${fake} stopped heartbeating`),
          ) === true;
        await waitFor(failed, 10000, "the handed call to fail");
      } finally {
        survivor.unwatch();
        await env.client.workflow
          .getHandle(`jai-presence-${survivorQueue}-1`)
          .terminate()
          .catch(() => {});
        await fakePresence.terminate().catch(() => {});
      }
    });
  }, 60000);
});

describe("news that a worker is gone", () => {
  it("makes the first survivor fail it over at once, from its last report, without waiting for its presence workflow", async () => {
    const fake = uniqueId("gone");
    let fakePresence: Awaited<ReturnType<typeof fakeWorkerTakes>>["presence"] | undefined;
    let call: PresenceReport["calls"][number] | undefined;
    // The fake worker's presence runs its first task on a fleet worker, which then stops: nothing runs the
    // presence workflow's fail-over after that, so only the survivor's own can fail the call.
    await withPresence("gone-fleet", "30s", async ({ worker }) => {
      const taken = await fakeWorkerTakes(worker, fake, `${fake}-identity`, 60000);
      fakePresence = taken.presence;
      const task = await taken.take();
      call = {
        workflowId: fakePresence.workflowId,
        runId: fakePresence.firstExecutionRunId,
        activityId: task.activityId ?? "",
        attempt: task.attempt ?? 1,
      };
      // Its last report names the call it has in hand (its own presence activity, the one call there is).
      await taken.beat(task, { calls: [call], runs: [{ workflowId: call.workflowId, runId: call.runId }] });
    });
    const survivor = new WorkerPresence(uniqueId("first-survivor"), 1000, false);
    survivor.watch(env.client, uniqueId("first-survivor-shared"));
    try {
      expect(survivor.firstSurvivor(fake)).toBe(true); // no other worker listed
      survivor.peerLost(
        { workerQueue: fake, address: { host: "127.0.0.1", port: 1 }, presenceWorkflowId: fakePresence!.workflowId },
        "refused",
      );
      const failed = async () =>
        (await fakePresence!.fetchHistory()).events?.find((e) =>
          e.activityTaskFailedEventAttributes?.failure?.message?.includes(`worker ${fake} stopped heartbeating`),
        );
      await waitFor(async () => (await failed()) !== undefined, 10000, "the reported call to fail");
      // Failed by the survivor: no workflow task of the presence ran after the fleet worker stopped.
      const events = (await fakePresence!.fetchHistory()).events ?? [];
      const failedAt = events.findIndex((e) => e.activityTaskFailedEventAttributes);
      expect(events.slice(failedAt).some((e) => e.workflowTaskCompletedEventAttributes)).toBe(false);
    } finally {
      survivor.unwatch();
      await env.client.workflow
        .getHandle(`jai-presence-${survivor.workerQueue}-1`)
        .terminate()
        .catch(() => {});
      await fakePresence?.terminate().catch(() => {});
    }
  }, 60000);
});

describe("a linked worker slow to answer its ping", () => {
  it("is not failed over: links tell a death at once, so it has 30 s to take the ping and 60 s to answer", async () => {
    await withPresence("slow-ping", "30s", async ({ worker }) => {
      const fake = uniqueId("slow-ping");
      const { presence, take, answer } = await fakeWorkerTakes(worker, fake, fake, 1000, { linked: true });
      await take(); // its presence activity, never heartbeated: silent after 1 s, then pinged
      await pinged(presence, 20000);
      // Overloaded: it takes the ping 6 s late and answers 21 s after that (at 500 and 1,000 runs, waits of 1 s
      // and 5 s, then of 5 s and 20 s, took live workers for dead).
      await new Promise((r) => setTimeout(r, 6000));
      const ping = await take();
      expect(ping.activityType?.name).toBe("workerPing");
      await new Promise((r) => setTimeout(r, 21000));
      await answer(ping, fake);
      expect(((await presence.result()) as PresenceOutcome).worker).toBe("alive");
    });
  }, 90000);

  it("that no peer holds a link to (none reach its address) is pinged as an unlinked one: its silence alone tells", async () => {
    await withPresence("unreached", "30s", async ({ worker }) => {
      /** The ping's timeouts as scheduled, once a fake worker whose last report says `linkedBy` falls silent. */
      const pingOf = async (linkedBy: number) => {
        const fake = uniqueId(`linked-by-${linkedBy}`);
        const { presence, take, beat } = await fakeWorkerTakes(worker, fake, fake, 1000, { linked: true });
        await beat(await take(), { calls: [], runs: [], links: [], linkedBy });
        await pinged(presence, 20000);
        const scheduled = ((await presence.fetchHistory()).events ?? []).find(
          (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "workerPing",
        )!.activityTaskScheduledEventAttributes!;
        return { presence, takenWithin: Number(scheduled.scheduleToStartTimeout?.seconds ?? 0) };
      };
      // No peer reached it: the ping is the presence timeout's (1 s), and nothing takes it: failed over.
      const unreached = await pingOf(0);
      expect(unreached.takenWithin).toBe(1);
      expect(((await unreached.presence.result()) as PresenceOutcome).worker).toBe("lost");
      // A peer held a link to it: the patient ping (a killed worker's links would have told at once).
      const reached = await pingOf(1);
      expect(reached.takenWithin).toBe(30);
      await reached.presence.terminate();
    });
  }, 90000);
});

describe("an attacker with a client of the namespace (does not know the fleet's secret)", () => {
  it("signals a live worker's presence that it is gone: it is pinged, answers, and its in-flight tool call runs once", async () => {
    // The slow tool runs 8 s; its presence has reported it when the forged news comes.
    const c = { ...config(), slowMs: 8000 };
    const first = await child(c);
    const handle = await startRun(c);
    await waitFor(
      () => readLog(c.logFile).some((e) => e.event === "tool_start" && e.tool === "slow"),
      30000,
      "the slow tool call",
    );
    await reported(first, handle.workflowId);
    const presence = presenceOf(first);
    await presence.signal(workerLostSignal, { evidence: "refused", by: "attacker" });
    await presence.signal(workerLostSignal, { evidence: "replaced", by: "attacker", mac: "0".repeat(64) });
    const result = await handle.result();
    expect(textOf(result.messages.at(-1))).toBe(FINAL);
    // Each tool call ran once (a fail-over would have failed the slow one, and Temporal would have run it again).
    const starts = readLog(c.logFile).filter((e) => e.event === "tool_start");
    const calls = starts.map((e) => e.toolCallId);
    expect(calls).toEqual([...new Set(calls)]);
    expect(starts.filter((e) => e.tool === "slow")).toHaveLength(1);
    // Not failed over: its presence runs on.
    expect((await presence.describe()).status.name).toBe("RUNNING");
    await first.stop();
  }, 90000);

  it("starts a presence whose memo points at its own listener: no worker connects there", async () => {
    let connections = 0;
    const listener = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, "127.0.0.1", resolve));
    const port = (listener.address() as net.AddressInfo).port;
    try {
      await withPresence(
        "crafted-memo",
        "30s",
        async ({ worker }) => {
          const forged = [
            { workerQueue: uniqueId("attacker"), links: { host: "127.0.0.1", port } },
            { workerQueue: uniqueId("attacker"), links: { host: "127.0.0.1", port }, mac: "0".repeat(64) },
          ];
          const handles = await Promise.all(
            forged.map((memo, i) =>
              env.client.workflow.start(WORKER_PRESENCE_WORKFLOW, {
                taskQueue: fleetTaskQueue(worker.taskQueue),
                workflowId: `jai-presence-${memo.workerQueue}-${i}`,
                args: [
                  {
                    workerQueue: memo.workerQueue,
                    presenceQueue: `${memo.workerQueue}-presence`,
                    timeoutMs: 60000,
                    renewAfterMs: 600000,
                  },
                ],
                memo,
              }),
            ),
          );
          try {
            // Two listings and more (every 3 s): none links to an unproven memo.
            await new Promise((r) => setTimeout(r, 7500));
            expect(connections).toBe(0);
          } finally {
            await Promise.all(handles.map((h) => h.terminate().catch(() => {})));
          }
        },
        { secret: "failover-test-secret-0123456789" },
      );
    } finally {
      listener.close();
    }
  }, 40000);

  it("starts a presence naming a live worker and its call, then falls silent: the fleet fails nothing over", async () => {
    await withPresence(
      "forged-presence",
      "30s",
      async ({ worker, presence, running }) => {
        const own = (await running())!;
        const attackerQueue = uniqueId("attacker-presence");
        const forged = await env.client.workflow.start(WORKER_PRESENCE_WORKFLOW, {
          taskQueue: fleetTaskQueue(worker.taskQueue),
          workflowId: uniqueId("forged-presence"),
          args: [
            {
              workerQueue: worker.ownTaskQueue!,
              presenceQueue: attackerQueue,
              timeoutMs: 1000,
              renewAfterMs: 600000,
            },
          ],
          memo: { workerQueue: worker.ownTaskQueue! },
        });
        const task = await env.connection.workflowService.pollActivityTaskQueue({
          namespace: "default",
          taskQueue: { name: attackerQueue },
          identity: "attacker",
        });
        expect(task.activityType?.name).toBe("workerPresence");
        // Its report names the live worker's own presence activity (a call the server says is running).
        const { runId } = await presence.describe();
        const report: PresenceReport = {
          calls: [{ workflowId: presence.workflowId, runId, activityId: own.activityId!, attempt: own.attempt! }],
          runs: [{ workflowId: presence.workflowId, runId }],
        };
        await env.connection.workflowService.recordActivityTaskHeartbeat({
          namespace: "default",
          taskToken: task.taskToken,
          details: { payloads: [env.client.options.loadedDataConverter.payloadConverter.toPayload(report)] },
          identity: "attacker",
        });
        // Silent from now on, its ping unanswered: a fail-over would fail the live worker's call.
        const outcome = await forged.result().then(
          (o) => o as PresenceOutcome,
          (err: Error) => err,
        );
        expect(outcome).toBeInstanceOf(Error);
        const messages: string[] = [];
        for (let e: (Error & { cause?: unknown }) | undefined = outcome as Error; e; e = e.cause as typeof e)
          messages.push(e.message);
        expect(messages.join(" / ")).toContain("does not prove the fleet's secret");
        expect(await running()).toMatchObject({ state: 2, attempt: 1, activityId: own.activityId });
        const events = (await presence.fetchHistory()).events ?? [];
        expect(events.some((e) => e.activityTaskFailedEventAttributes)).toBe(false);
      },
      { secret: "failover-test-secret-0123456789" },
    );
  }, 60000);
});

describe("presences that ran before news was checked", () => {
  it("replay as they ran: sure news failed the worker over without a check (a patched change)", async () => {
    // Recorded with the code before the check: "closed" news, a ping answered, then "refused" news and a fail-over.
    const file = path.join(
      path.dirname(fileURLToPath(import.meta.url)),
      "../fixtures/histories/frozen/before-presence-news-check.json",
    );
    const history = await readHistoryFile(file);
    const events = history.events ?? [];
    expect(events.filter((e) => e.workflowExecutionSignaledEventAttributes)).toHaveLength(2);
    expect(events.some((e) => e.markerRecordedEventAttributes?.markerName === "core_patch")).toBe(true); // its end
    const patches = events
      .filter((e) => e.markerRecordedEventAttributes?.markerName === "core_patch")
      .map((e) =>
        Buffer.from(e.markerRecordedEventAttributes!.details?.["patch-data"]?.payloads?.[0]?.data ?? []).toString(),
      );
    expect(patches.some((p) => p.includes("jai-presence-news-checked"))).toBe(false);
    await expect(
      Worker.runReplayHistory(replayOptions(await sharedBundle("presence")), history, "before-presence-news-check"),
    ).resolves.toBeUndefined();
  }, 60000);
});
