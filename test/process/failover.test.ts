/**
 * Fast failover (issue 17): a worker's presence workflow heartbeats what it has in hand; when a worker is killed,
 * a survivor fails its calls by id and clears its runs' sticky queues at once, instead of each run waiting out
 * its own heartbeat timeout. Real worker processes, real `kill -9` and SIGSTOP; the runs use a 60 s model
 * heartbeat, so a run that goes on within the test's time was moved by the failover, and the history says so.
 * Each scenario has its own task queue, workers and log, so they run concurrently (they mostly wait on timeouts).
 * The presence workflow and fleet with in-process and fake workers: test/server/failover-presence.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import proto from "@temporalio/proto";
import type { AgentRunHandle } from "../../src/client.js";
import type { PresenceOutcome } from "../../src/failover/presence.js";
import type { PresenceReport } from "../../src/failover/types.js";
import { workerLostSignal } from "../../src/failover/presence-workflow.js";
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
import { openTestEnv, textOf, type TestEnv } from "../support/helpers.js";
import { pinged } from "../support/presence.js";

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

/**
 * In the scenarios that cut the first worker in turn 2 (with kill -9, SIGSTOP or links), it streams that answer for ~15 s, so the cut lands mid-call
 * even when a loaded suite is slow to see the call reported; the survivor streams it again in ~2 s.
 */
const SLOW_FIRST = 4;
const FAST_SURVIVOR = 30;

async function child(c: HarnessConfig): Promise<ChildWorker> {
  const worker = await startChildWorker(c);
  children.push(worker);
  return worker;
}

/** The scenario's run with a model heartbeat far longer than the test waits: only a failover moves it in time. */
const startRun = (c: HarnessConfig) =>
  startScenarioRun(env.client, c, { heartbeatTimeout: "60s", workflowTaskTimeout: "2s" });

/** Turn 2's model call has started on worker `pid` (routed there: it holds the run's context). */
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
 * The scenario's run with two workers, the first one in turn 2's model call (~15 s of streaming) and its presence
 * having reported it: the first worker alone until it holds the run's context (turn 1's answer), then the survivor.
 */
async function firstWorkerInTurn2(extra: Partial<HarnessConfig> = {}) {
  const c = { ...config(), ...extra };
  const first = await child({ ...c, tokensPerSecond: SLOW_FIRST });
  const handle = await startRun(c);
  await waitFor(() => readLog(c.logFile).some((e) => e.event === "tool_start"), 30000, "turn 1's tools");
  const second = await child({ ...c, tokensPerSecond: FAST_SURVIVOR });
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

/** One of the run's model calls failed as `worker`'s: the fail-over's message names it. The calls print when not. */
function expectCallFailedAsWorkers(calls: Awaited<ReturnType<typeof modelCalls>>, worker: ChildWorker): void {
  expect(calls).toContainEqual(
    expect.objectContaining({
      failure: expect.objectContaining({ message: `worker ${worker.ownQueue} stopped heartbeating` }),
    }),
  );
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
  it.concurrent(
    "kill -9 mid model call: a survivor fails the dead worker's call by id and the run goes on",
    async () => {
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
      expect({ lost: lost >= 0, calls }).toEqual(expect.objectContaining({ lost: true })); // prints the calls when not
      expect(calls[lost].failure!.timeout).toBe(proto.temporal.api.enums.v1.TimeoutType.TIMEOUT_TYPE_HEARTBEAT);
      if (calls[lost].queue === first.ownQueue) expect(calls[lost + 1].queue).toBe(c.taskQueue);
      else expect(calls[lost].queue).toBe(c.taskQueue);
      expect(calls.some((m) => m.timedOut)).toBe(false);
      // The survivor is still watched.
      await expect(presenceOf(second).describe()).resolves.toMatchObject({ status: { name: "RUNNING" } });
      await second.stop();
    },
    90000,
  );

  it.concurrent(
    "a worker paused past its presence timeout is failed over, and watched again once it resumes",
    async () => {
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
      // Its call failed as its worker's (by the fail-over, or by a survivor's link).
      expectCallFailedAsWorkers(await modelCalls(handle), first);
      // A worker that shuts down ends its presence (the survivor runs the workflow's last task): no failover.
      await first.stop();
      expect(((await presenceOf(first, 2).result()) as PresenceOutcome).worker).toBe("stopped");
      await second.stop();
    },
    120000,
  );
});

describe("fast failover: links", () => {
  it.concurrent(
    "kill -9: the survivor's link closes and nothing listens at the dead worker's address: it is failed over at once, not after its presence timeout",
    async () => {
      // A presence timeout longer than the test: only the link can tell in time.
      const { first, second, handle } = await firstWorkerInTurn2({ presenceTimeout: "60s" });
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
      // The report came from the server (no timeout carried it): the call it named failed as its worker's, by the
      // survivor the link told or by the presence's fail-over.
      expectCallFailedAsWorkers(await modelCalls(handle), first);
      await second.stop();
    },
    90000,
  );
});

describe("fast failover: a live worker", () => {
  it.concurrent(
    "whose heartbeats stop but that answers its ping is not failed over, and is watched again",
    async () => {
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
    },
    90000,
  );
});

describe("fast failover: the dead worker's queue", () => {
  it.concurrent(
    "a run that held its context there sends its next model call there: the survivor that failed it over takes it at once",
    async () => {
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
    },
    90000,
  );
});

describe("an attacker with a client of the namespace (does not know the fleet's secret)", () => {
  it.concurrent(
    "signals a live worker's presence that it is gone: it is pinged, answers, and its in-flight tool call runs once",
    async () => {
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
    },
    90000,
  );
});
