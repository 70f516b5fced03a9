/**
 * Fast failover's presence workflow and fleet, with in-process workers and fake ones the test drives through the
 * server's API (issue 17): what a worker reports, news of a lost worker, pings, forged presences and news, and
 * replays of presences recorded before a change. The suites with real worker processes, `kill -9` and SIGSTOP are
 * in test/process/failover.test.ts. Scenarios that wait on the server's timers run concurrently.
 */
import { describe, expect, it } from "@jest/globals";
import proto from "@temporalio/proto";
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
import { fastFailover } from "../../src/failover/index.js";
import { waitFor } from "../support/crash/harness.js";
import { createAgentWorker, type AgentWorker } from "../../src/worker.js";
import type { WorkflowHandle } from "@temporalio/client";
import { uniqueId, withServer } from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";
import { pinged } from "../support/presence.js";

const env = withServer();

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
    // Before the first start (which is when the gap counts from): seen only once it has started, a loaded machine
    // would see it late and the gap short.
    const beforeFirst = Date.now();
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
      // Given up at once, twice (an overloaded worker late on every heartbeat): one restart, put off.
      presence.givenUp();
      presence.givenUp();
      await new Promise((r) => setTimeout(r, 1000));
      expect(await started(2)).toBe(false);
      await waitFor(() => started(2), 10000, "the restart put off");
      expect(Date.now() - beforeFirst).toBeGreaterThanOrEqual(5000);
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
  it.concurrent(
    "that cannot say whether the worker is gone makes its presence ping it: a live worker answers and stays watched",
    async () => {
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
    },
    40000,
  );
});

describe("a report read from the server", () => {
  it.concurrent(
    "after the presence activity timed out (a link's news, then a fail-over slower than the presence timeout) comes from the timeout's details",
    async () => {
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
    },
    60000,
  );
});

describe("calls handed to a dying worker's last polls", () => {
  it.concurrent(
    "are failed by what the server says started them (its identities), though no report named them; others' are not",
    async () => {
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
    },
    60000,
  );

  it.concurrent(
    "are failed at once by each survivor a link told, for its own runs of the last seconds",
    async () => {
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
    },
    60000,
  );
});

describe("news that a worker is gone", () => {
  it.concurrent(
    "makes the first survivor fail it over at once, from its last report, without waiting for its presence workflow",
    async () => {
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
    },
    60000,
  );
});

describe("a linked worker slow to answer its ping", () => {
  it.concurrent(
    "is not failed over: links tell a death at once, so it has 30 s to take the ping and 60 s to answer",
    async () => {
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
    },
    90000,
  );

  it.concurrent(
    "that no peer holds a link to (none reach its address) is pinged as an unlinked one: its silence alone tells",
    async () => {
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
    },
    90000,
  );
});

describe("an attacker with a client of the namespace (does not know the fleet's secret)", () => {
  it.concurrent(
    "starts a presence whose memo points at its own listener: no worker connects there",
    async () => {
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
    },
    40000,
  );

  it.concurrent(
    "starts a presence naming a live worker and its call, then falls silent: the fleet fails nothing over",
    async () => {
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
    },
    60000,
  );
});

describe("presences that ran before news was checked", () => {
  it.concurrent(
    "replay as they ran: sure news failed the worker over without a check (a patched change)",
    async () => {
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
    },
    60000,
  );
});
