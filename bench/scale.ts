/**
 * Scale (issue 17): many concurrent long runs over 1-3 worker processes on one
 * dev server; scripted model answering at once, 8 KB tool results. Reports what
 * the context cache and model-call routing save: query bytes against
 * transcript bytes, hit rate, worker memory, turn latency, runs lost; and, with
 * `--scale-kill`, what a SIGKILLed worker costs its runs.
 *
 * Sizes by flag: `npm run bench -- scale --scale-workers=1,3 --scale-runs=100,500
 * --scale-turns=20 --scale-kb=8 --scale-cache-mb=256 --scale-kill --scale-route=off`; `--scale-cluster` runs them
 * on a Temporal server on PostgreSQL (the cluster suite's, built on first use) instead of the dev server.
 * Tuning tried at saturation: `--scale-sticky=3s`, `--scale-workflow-tasks=200`, `--scale-workflow-polls=40` (or
 * `autoscaling`), `--scale-activity-polls=autoscaling`, `--scale-nonsticky-ratio=1`, `--scale-wft-timeout=10s`,
 * `--scale-workflow-threads=2` (workflow threads per worker: the survivors replay a kill's victims on two),
 * `--scale-replays=10` (`maxConcurrentReplays`: workflow tasks from the shared queue a worker runs at once),
 * `--scale-can-turns=5` (runs continue as new every 5 turns: shorter replays), and
 * the server's dynamic config with `--server-config key=value` (e.g. `matching.numTaskqueueReadPartitions=1`).
 * The runs' timeouts: `--scale-heartbeat=30s` (calls' heartbeat timeout, 5 s unless set) and
 * `--scale-wft-timeout=3s` (workflow task timeout, the heartbeat's unless set; `default`: Temporal's 10 s).
 */
import { fork, type ChildProcess } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { ContextCacheStats } from "../src/worker/activities/index.js";
import { startAgentRun, type AgentRunHandle } from "../src/client/client.js";
import { Client, Connection } from "@temporalio/client";
import proto from "@temporalio/proto";
import { eventMs } from "../src/client/history-story.js";
import { EVENTS_IDENTITY_MARK } from "../src/client/events/subscribe.js";
import { msToNumber, type Duration } from "@temporalio/common";
import type { History } from "../src/worker/replay.js";
import { ensureTemporalServer } from "../scripts/tools.js";
import { startPostgres } from "../test/support/cluster/postgres.js";
import { createTemporalServer, freeLowPort, setupSchema } from "../test/support/cluster/temporal-server.js";
import { mb, replayMsEach, serverConfig, table, taskQueueStats, type Bench } from "./common.js";
import { quantile } from "./stats.js";
import { stallMs } from "./kill-stall.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;

const here = path.dirname(fileURLToPath(import.meta.url));
/**
 * The runs' heartbeat timeout (model and tool calls): a call in flight on the killed worker is given up after it.
 * 5 s, shorter than the product's 30 s; `--scale-heartbeat=30s` measures the product's defaults.
 */
const HEARTBEAT = flag("scale-heartbeat") ?? "5s";
const HEARTBEAT_MS = msToNumber(HEARTBEAT as Duration);
/**
 * The runs' workflow task timeout: a workflow task the killed worker had taken is given up after it (Temporal's
 * default, 10 s, alone exceeds the 5 s heartbeat + 3 s goal), so the runs are started with it equal to the heartbeat
 * timeout. Shorter is quicker after a kill but, at saturation, a survivor's replay outlives it and is replayed
 * again (with 3 s: worst victims 7.0-15.4 s in seven benches; docs/lab/scaling.md). `--scale-wft-timeout=3s` sets
 * another, `--scale-wft-timeout=default` leaves Temporal's (10 s).
 */
const WFT_FLAG = flag("scale-wft-timeout") ?? HEARTBEAT;
const WORKFLOW_TASK_TIMEOUT = WFT_FLAG === "default" ? undefined : WFT_FLAG;

/**
 * `--scale-can-turns=5`: runs continue as new after that many turns (`continueAsNew.afterTurns`), so a survivor
 * replays at most that many turns of a victim's history; unset, a run keeps one history for all its turns.
 */
const CAN_TURNS = flag("scale-can-turns");

export function flag(name: string): string | undefined {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`) || a === `--${name}`);
  return hit === undefined ? undefined : hit.includes("=") ? hit.slice(hit.indexOf("=") + 1) : "true";
}
const list = (value: string | undefined, fallback: number[]) => (value ? value.split(",").map(Number) : fallback);

export interface Worker {
  child: ChildProcess;
  calls: [string, number, number, 0 | 1][];
  alive: boolean;
  baseRss: number;
  peakRss: number;
  last?: { cache: ContextCacheStats; rss: number; heapUsed: number };
}

export async function startWorker(env: NodeJS.ProcessEnv): Promise<Worker> {
  const child = fork(path.join(here, "scale-worker.ts"), [], {
    env: { ...process.env, ...env },
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const worker: Worker = { child, calls: [], alive: true, baseRss: 0, peakRss: 0 };
  child.on("message", (msg: any) => {
    if (msg.type === "calls") worker.calls = msg.calls;
    if (msg.type === "stats") {
      worker.last = msg;
      worker.peakRss = Math.max(worker.peakRss, msg.rss);
    }
  });
  child.on("exit", () => (worker.alive = false));
  await new Promise<void>((resolve, reject) => {
    child.once("message", (msg: any) =>
      msg.type === "ready" ? resolve() : reject(new Error(`unexpected ${msg.type}`)),
    );
    child.once("exit", (code) => reject(new Error(`bench worker exited with ${code} before it was ready`)));
  });
  return worker;
}

/** Asks every live worker for its stats and call log, and waits for the answers. */
export async function poll(workers: Worker[]): Promise<void> {
  await Promise.all(
    workers
      .filter((w) => w.alive)
      .map(
        (w) =>
          new Promise<void>((resolve) => {
            let pending = 2;
            const onMessage = (msg: any) => {
              if (msg.type === "stats" || msg.type === "calls") pending--;
              if (pending === 0) done();
            };
            const done = () => {
              w.child.off("message", onMessage);
              clearTimeout(timer);
              resolve();
            };
            const timer = setTimeout(done, 5000);
            w.child.on("message", onMessage);
            try {
              w.child.send({ type: "stats" });
              w.child.send({ type: "calls" });
            } catch {
              done();
            }
          }),
      ),
  );
}

const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** Percentile `p` (0-100) by the benches' rank rule; 0 when there are none. */
const percentile = (values: number[], p: number) => (values.length ? quantile(values, p / 100) : 0);

interface Row {
  workers: number;
  runs: number;
  turns: number;
  modelCalls: number;
  hitRate: number;
  refReads: number;
  queryBytes: number;
  transcriptBytes: number;
  baseRss: number;
  peakRss: number;
  cacheBytes: number;
  p50: number;
  p99: number;
  fallbacks: number;
  /** The shared workflow task queue, sampled every 3 s: where sticky misses and a dead worker's runs wait. */
  sharedQueue: SharedQueue;
  lost: number;
  seconds: number;
  /** Turns across the kill: of its victims and, at the same moment, of the other runs. */
  kill?: {
    victims: number;
    /** Victims whose last model call before the kill ran on the killed worker. */
    byModelCall: number;
    /** Victims whose last workflow task before the kill ran there. */
    byWorkflowTask: number;
    victimP50: number;
    victimP90: number;
    victimP99: number;
    victimMax: number;
    /** Replaying one victim's history up to the kill, ms (idle machine). */
    replayMs: number;
    controlP50: number;
    controlP90: number;
    controlP99: number;
    controlMax: number;
    /** Victims' stall (`stallMs`): kill to their work running again. */
    stallP50: number;
    stallP90: number;
    stallMax: number;
    /** Victims with no stall figure (`stallMs` undefined): the goal cannot be judged met with any. */
    unmeasured: number;
    /** The other runs' stall over the same moment: what load alone did. */
    controlStallP50: number;
    controlStallMax: number;
  };
}

/** The shared workflow task queue over a bench: its backlog (mean and most) and its oldest task's age (most), seconds. */
interface SharedQueue {
  /** Samples the server answered (0: the figures below mean nothing). */
  samples: number;
  backlogMean: number;
  backlogMax: number;
  oldestMaxS: number;
}

/**
 * Samples the shared workflow task queue (Temporal's approximate backlog count and age) until the function it
 * returns is called: at saturation the runs whose sticky workflow task timed out, and a dead worker's runs, wait there.
 */
function sampleSharedQueue(client: Client, taskQueue: string) {
  const backlogs: number[] = [];
  let oldestMaxS = 0;
  let stopped = false;
  const done = (async () => {
    while (!stopped) {
      const stats = await taskQueueStats(client, taskQueue, "workflow");
      // A server that does not report statistics, or a sample lost to a busy server: no sample.
      if (stats) {
        backlogs.push(stats.backlog);
        oldestMaxS = Math.max(oldestMaxS, stats.oldestS);
      }
      await new Promise((r) => setTimeout(r, 3000));
    }
  })();
  return async (): Promise<SharedQueue> => {
    stopped = true;
    await done;
    return {
      samples: backlogs.length,
      backlogMean: backlogs.length ? backlogs.reduce((a, b) => a + b, 0) / backlogs.length : 0,
      backlogMax: Math.max(0, ...backlogs),
      oldestMaxS,
    };
  };
}

/** What the kill added to its victims' turn, over the other runs' turn at the same moment (worst against worst, p50 against p50). */
const killCost = (k: NonNullable<Row["kill"]>) => ({
  worst: k.victimMax - k.controlMax,
  p50: k.victimP50 - k.controlP50,
  p90: k.victimP90 - k.controlP90,
  p99: k.victimP99 - k.controlP99,
});

/** Where the bench's runs go: the bench's dev server, or (`--scale-cluster`) a Temporal server on PostgreSQL. */
interface Target {
  kind: string;
  address: string;
  client: Client;
  close(): Promise<void>;
}

/** The cluster suite's topology without its workers: PostgreSQL and the Temporal server built from source. */
async function clusterTarget(): Promise<Target> {
  const tools = ensureTemporalServer((line) => console.error(line));
  const pg = startPostgres(await freeLowPort(new Set()));
  try {
    setupSchema(tools, pg.port);
    const server = await createTemporalServer(tools, pg.port, serverConfig());
    const connection = await Connection.connect({ address: server.address });
    return {
      kind: "a Temporal server (v1.29.1) on PostgreSQL 15",
      address: server.address,
      client: new Client({ connection }),
      async close() {
        await connection.close();
        await server.stop();
        server.cleanup();
        pg.stop();
      },
    };
  } catch (err) {
    pg.stop();
    throw err;
  }
}

/**
 * A run's histories from the run that was open at `since` on, oldest first: one unless it continued as new since
 * (`--scale-can-turns`). Each run numbers its events from 1.
 */
async function chainSince(client: Client, workflowId: string, since: number): Promise<Event[][]> {
  const runs: Event[][] = [];
  let runId: string | undefined;
  for (;;) {
    const events = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    const start = events[0];
    const previous = start?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!start || !previous || eventMs(start) <= since) return runs;
    runId = previous;
  }
}

/**
 * The replay a kill hands to the survivors: its victims' histories up to the kill (to the last workflow task
 * completed before it), replayed here after the bench, when the machine is idle. Returns ms per victim (0 when
 * not measured).
 */
async function victimReplayMs(client: Client, bundle: { code: string }, ids: string[], killedAt: number) {
  const histories: { workflowId: string; history: History }[] = [];
  for (const workflowId of ids) {
    // The run a survivor replayed: the one open at the kill.
    const [events] = await chainSince(client, workflowId, killedAt);
    let cut = -1;
    events.forEach((e, i) => {
      if (e.workflowTaskCompletedEventAttributes && eventMs(e) <= killedAt) cut = i;
    });
    if (cut > 0) histories.push({ workflowId, history: { events: events.slice(0, cut + 1) } });
  }
  if (histories.length < 2) return 0;
  try {
    return await replayMsEach(bundle, histories);
  } catch (err) {
    console.error(`  ${String(err)}`);
    return 0;
  }
}

/**
 * What the kill did, read from every run's history (fetched after the bench, 8 at a time): `on`, the runs whose last
 * workflow task started before `killedAt` was taken by the worker named `identity`; `waitedOnDead`, the runs with a
 * model call that, after the kill, waited out its schedule-to-start timeout on a worker's own queue; `lostActivity`, the
 * runs with an activity scheduled before the kill that timed out on its heartbeat after it or was started again then
 * (a tool call in flight on the killed worker: Temporal retries it without an event); `stalls`, each run's `stallMs`
 * (none: the run neither scheduled an activity after the kill nor ended).
 */
export async function killFromHistories(client: Client, ids: string[], killedAt: number, identity: string) {
  const on = new Set<string>();
  const waitedOnDead = new Set<string>();
  const lostActivity = new Set<string>();
  const stalls = new Map<string, number>();
  let next = 0;
  const fetchOne = async (): Promise<void> => {
    while (next < ids.length) {
      const id = ids[next++];
      let last: string | undefined;
      const runs = await chainSince(client, id, killedAt);
      for (const events of runs) {
        const scheduledAt = new Map<number, number>(); // event ids are per run
        for (const e of events) {
          if (e.workflowTaskStartedEventAttributes && eventMs(e) <= killedAt)
            // The worker's identity, without the events server's address the worker appends to it.
            last = e.workflowTaskStartedEventAttributes.identity?.split(EVENTS_IDENTITY_MARK)[0];
          const timeout = e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType;
          if (timeout === 2 && eventMs(e) > killedAt) waitedOnDead.add(id); // SCHEDULE_TO_START: only routed calls have one
          if (e.activityTaskScheduledEventAttributes) scheduledAt.set(Number(e.eventId), eventMs(e));
          // An activity scheduled before the kill that timed out on its heartbeat, or was started again, after it.
          const lost =
            timeout === 4
              ? e.activityTaskTimedOutEventAttributes?.scheduledEventId
              : (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1
                ? e.activityTaskStartedEventAttributes?.scheduledEventId
                : undefined;
          if (lost != null && eventMs(e) > killedAt && (scheduledAt.get(Number(lost)) ?? Infinity) <= killedAt)
            lostActivity.add(id);
        }
      }
      if (last === identity) on.add(id);
      const stall = stallMs(runs, killedAt);
      if (stall !== undefined) stalls.set(id, stall);
    }
  };
  await Promise.all(Array.from({ length: 8 }, fetchOne));
  return { on, waitedOnDead, lostActivity, stalls };
}

async function runConfig(
  target: Target,
  bundle: { code: string },
  bundlePath: string,
  workersN: number,
  runs: number,
  turns: number,
  resultBytes: number,
  kill: boolean,
): Promise<Row> {
  const taskQueue = `scale-${workersN}w-${runs}r-${Date.now()}`;
  const env = {
    TEMPORAL_ADDRESS: target.address,
    SCALE_TASK_QUEUE: taskQueue,
    SCALE_BUNDLE: bundlePath,
    SCALE_TURNS: String(turns),
    SCALE_RESULT_BYTES: String(resultBytes),
    SCALE_HEARTBEAT: HEARTBEAT,
    ...(flag("scale-cache-mb") ? { SCALE_CACHE_BYTES: String(Number(flag("scale-cache-mb")) * 1024 * 1024) } : {}),
    ...(flag("scale-route") ? { SCALE_ROUTE: flag("scale-route") } : {}),
    ...(flag("scale-sticky") ? { SCALE_STICKY: flag("scale-sticky") } : {}),
    ...(flag("scale-workflow-tasks") ? { SCALE_WORKFLOW_TASKS: flag("scale-workflow-tasks") } : {}),
    ...(flag("scale-workflow-threads") ? { SCALE_WORKFLOW_THREADS: flag("scale-workflow-threads") } : {}),
    ...(flag("scale-nonsticky-ratio") ? { SCALE_NONSTICKY_RATIO: flag("scale-nonsticky-ratio") } : {}),
    ...(flag("scale-workflow-polls") ? { SCALE_WORKFLOW_POLLS: flag("scale-workflow-polls") } : {}),
    ...(flag("scale-model-ms") ? { SCALE_MODEL_MS: flag("scale-model-ms") } : {}),
    ...(flag("scale-replays") ? { SCALE_REPLAYS: flag("scale-replays") } : {}),
    ...(flag("scale-activity-polls") ? { SCALE_ACTIVITY_POLLS: flag("scale-activity-polls") } : {}),
  };
  const workers = await Promise.all(Array.from({ length: workersN }, () => startWorker(env)));
  await poll(workers);
  for (const w of workers) w.baseRss = w.last?.rss ?? 0;
  const started = Date.now();
  const handles: AgentRunHandle[] = [];
  for (let i = 0; i < runs; i += 50) {
    handles.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(50, runs - i) }, (_, j) =>
          startAgentRun(target.client, {
            taskQueue,
            workflowId: `${taskQueue}-${i + j}`,
            model: "bench/scale",
            prompt: "go",
            maxTurns: turns + 5,
            modelActivity: { heartbeatTimeout: HEARTBEAT },
            ...(WORKFLOW_TASK_TIMEOUT ? { workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT } : {}),
            ...(CAN_TURNS ? { continueAsNew: { afterTurns: Number(CAN_TURNS) } } : {}),
          }),
        ),
      )),
    );
  }
  const sharedQueue = sampleSharedQueue(target.client, taskQueue);
  let killedAt: number | undefined;
  let finished = false;
  const sampler = (async () => {
    while (!finished) {
      await poll(workers);
      const calls = workers.reduce((n, w) => n + w.calls.length, 0);
      if (kill && killedAt === undefined && workersN > 1 && calls >= (runs * turns) / 2) {
        workers[workersN - 1].child.kill("SIGKILL");
        killedAt = Date.now();
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  })();
  const deadline = Number(flag("scale-deadline-s") ?? 3600) * 1000;
  let expire!: () => void;
  const expired = new Promise<never>((_, reject) => (expire = () => reject(new Error("deadline"))));
  expired.catch(() => {});
  const timer = setTimeout(expire, deadline);
  const settled = await Promise.allSettled(handles.map((h) => Promise.race([h.result(), expired])));
  clearTimeout(timer);
  const seconds = (Date.now() - started) / 1000;
  finished = true;
  await sampler;
  const shared = await sharedQueue();
  await poll(workers);
  const ok = settled.flatMap((s) =>
    s.status === "fulfilled" && s.value.stopReason === "stop" && s.value.turns === turns ? [s.value] : [],
  );
  const transcriptBytes = ok.reduce((n, r) => n + JSON.stringify(r.messages).length, 0);
  // Why turns stall at saturation: retried attempts in a sample of the runs' histories, by activity and failure.
  const retried = new Map<string, number>();
  for (const h of handles.slice(0, 40)) {
    for (const e of (await h.workflow.fetchHistory()).events ?? []) {
      const started = e.activityTaskStartedEventAttributes;
      if (started && (started.attempt ?? 1) > 1) {
        const why = `attempt ${started.attempt}: ${(started.lastFailure?.message ?? "?").slice(0, 90)}`;
        retried.set(why, (retried.get(why) ?? 0) + 1);
      }
      const why = e.workflowTaskTimedOutEventAttributes
        ? `workflow task timed out (${["?", "start-to-close", "schedule-to-start", "schedule-to-close", "heartbeat"][e.workflowTaskTimedOutEventAttributes.timeoutType ?? 0]})`
        : e.workflowTaskFailedEventAttributes
          ? `workflow task failed (${e.workflowTaskFailedEventAttributes.cause})`
          : undefined;
      if (why) retried.set(why, (retried.get(why) ?? 0) + 1);
    }
  }
  console.error(`  retries in 40 runs' histories: ${[...retried].map(([k, n]) => `${n}× ${k}`).join("; ") || "none"}`);

  // Turn latency: from one model call of a run to its next (a tool call and two workflow tasks in between).
  const byRun = new Map<string, Map<number, number>>();
  for (const w of workers) {
    for (const [id, turn, at] of w.calls) {
      const turnsOf = byRun.get(id) ?? new Map<number, number>();
      byRun.set(id, turnsOf);
      if (!turnsOf.has(turn) || turnsOf.get(turn)! > at) turnsOf.set(turn, at);
    }
  }
  const gaps: number[] = [];
  // A kill's victims: runs whose last model call before it was served by the killed worker (its context cache,
  // its own queue), and runs whose last workflow task before it ran there (its sticky queue and workflow cache:
  // a run's workflow tasks and its model calls need not be on the same worker), and runs whose tool call was in
  // flight there. The others, over the same moment, are the control: what load alone did to a turn then.
  const killed = workers[workersN - 1];
  const lastBefore = new Map<string, { at: number; onKilled: boolean }>();
  if (killedAt !== undefined)
    for (const w of workers)
      for (const [id, , at] of w.calls)
        if (at <= killedAt && at >= (lastBefore.get(id)?.at ?? 0)) lastBefore.set(id, { at, onKilled: w === killed });
  const {
    on: stickyOnKilled,
    waitedOnDead,
    lostActivity,
    stalls,
  } = killedAt !== undefined
    ? await killFromHistories(target.client, [...byRun.keys()], killedAt, `scale-worker-${killed.child.pid}`)
    : {
        on: new Set<string>(),
        waitedOnDead: new Set<string>(),
        lostActivity: new Set<string>(),
        stalls: new Map<string, number>(),
      };
  /** What a run lost with the killed worker: its model context (and own queue), its workflow task (sticky queue). */
  const lostModel = (id: string) => lastBefore.get(id)?.onKilled === true;
  const lostTask = (id: string) => stickyOnKilled.has(id);
  const control: number[] = [];
  /** Each victim's turn across the kill, with its run's id. */
  const victimGaps: [string, number][] = [];
  for (const [id, turnsOf] of byRun) {
    const times = [...turnsOf.entries()].sort((a, b) => a[0] - b[0]).map(([, at]) => at);
    for (let i = 1; i < times.length; i++) {
      const gap = times[i] - times[i - 1];
      gaps.push(gap);
      if (killedAt !== undefined && times[i - 1] <= killedAt && times[i] > killedAt) {
        if (lostModel(id) || lostTask(id) || lostActivity.has(id)) victimGaps.push([id, gap]);
        else control.push(gap);
      }
    }
  }
  const victims = victimGaps.map(([, gap]) => gap);
  const victimStalls = victimGaps.flatMap(([id]) => (stalls.has(id) ? [stalls.get(id)!] : []));
  const victimIds = new Set(victimGaps.map(([id]) => id));
  const controlStalls = [...stalls].flatMap(([id, ms]) => (victimIds.has(id) ? [] : [ms]));
  if (victimStalls.length > 0)
    console.error(
      `  stall (kill to the run's work running again) p50 / p90 / worst: victims ${[50, 90].map((q) => sec(percentile(victimStalls, q))).join(" / ")} / ${sec(Math.max(...victimStalls))}, others ${[50, 90].map((q) => sec(percentile(controlStalls, q))).join(" / ")} / ${sec(Math.max(0, ...controlStalls))}`,
    );
  if (victimGaps.length > 0) {
    // Which victims pay most: those that lost their model context, their workflow task, or both, each against
    // the control's turn at the same quantile.
    const kinds = {
      "model call only": victimGaps.filter(([id]) => lostModel(id) && !lostTask(id)),
      "workflow task only": victimGaps.filter(([id]) => !lostModel(id) && lostTask(id)),
      both: victimGaps.filter(([id]) => lostModel(id) && lostTask(id)),
      "a tool call only": victimGaps.filter(([id]) => !lostModel(id) && !lostTask(id)),
    };
    const over = (gaps: number[], q: number) => ((percentile(gaps, q) - percentile(control, q)) / 1000).toFixed(1);
    console.error(
      `  kill cost by what the victim lost (p50 / max over the others'): ${Object.entries(kinds)
        .map(([kind, list]) => {
          const gaps = list.map(([, gap]) => gap);
          return `${kind} ${list.length}: ${gaps.length ? `${over(gaps, 50)} / ${((Math.max(...gaps) - Math.max(0, ...control)) / 1000).toFixed(1)} s` : "-"}`;
        })
        .join("; ")}`,
    );
    // A model call sent to the dead worker's own queue waits out its schedule-to-start timeout before any worker
    // takes it: what the run's routing could not tell, by what the victim lost.
    const waited = Object.entries(kinds).map(
      ([kind, list]) => `${kind} ${list.filter(([id]) => waitedOnDead.has(id)).length}`,
    );
    console.error(`  victims whose model call waited out a dead worker's queue: ${waited.join("; ")}`);
  }
  const stats = workers.flatMap((w) => (w.last ? [w.last.cache] : []));
  const sum = (f: (s: ContextCacheStats) => number) => stats.reduce((n, s) => n + f(s), 0);
  const hits = sum((s) => s.hits);
  const misses = sum((s) => s.misses);
  if (killedAt !== undefined) {
    // The fleet's pace around the kill: model calls per 5 s, by the worker that served them (the killed one last).
    const at = killedAt;
    const buckets = Array.from({ length: 24 }, (_, b) =>
      workers.map((w) => w.calls.filter(([, , t]) => t >= at + (b - 4) * 5000 && t < at + (b - 3) * 5000).length),
    );
    console.error(
      `  model calls per 5 s around the kill (per worker): ${buckets.map((b, i) => `${(i - 4) * 5}s ${b.join("/")}`).join(", ")}`,
    );
  }
  if (killedAt !== undefined && victimGaps.length > 0) {
    // Where the slowest and a median victim spent their turn across the kill: their history from the kill on.
    victimGaps.sort((a, b) => b[1] - a[1]);
    const stallOf = (id: string) => stalls.get(id) ?? 0;
    const slowest = [...victimGaps].sort((a, b) => stallOf(b[0]) - stallOf(a[0])).slice(0, 3);
    const picks = [...new Set([...victimGaps.slice(0, 3), ...slowest, victimGaps[Math.floor(victimGaps.length / 2)]])];
    for (const [id, gap] of picks) {
      const events = (await chainSince(target.client, id, killedAt!)).flat();
      const trace = events
        .map((e) => ({ e, at: eventMs(e) }))
        .filter(({ at }) => at >= killedAt! - 2000 && at <= killedAt! + gap + 2000)
        .slice(0, 30)
        .map(({ e, at }) => {
          const kind = String(e.eventType);
          const q = e.activityTaskScheduledEventAttributes?.taskQueue?.name;
          const t =
            e.activityTaskTimedOutEventAttributes?.failure?.timeoutFailureInfo?.timeoutType ??
            e.workflowTaskTimedOutEventAttributes?.timeoutType;
          const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
          return `${((at - killedAt!) / 1000).toFixed(1)}s ${kind}${name ? ` ${name}` : ""}${q ? (q === taskQueue ? " shared" : " routed") : ""}${t ? ` t${t}` : ""}`;
        });
      console.error(
        `  victim ${id} (turn across the kill ${sec(gap)}, stall ${sec(stallOf(id))}): ${trace.join(", ")}`,
      );
    }
  }
  // What recovering the victims costs the survivors before any of them can go on: each victim's workflow task lands
  // on a worker without its state, which replays its history first. Measured on 40 victims spread over the
  // slowest-first list (not the 40 slowest), scaled to all of them.
  const replayMs =
    killedAt !== undefined && victimGaps.length > 0
      ? await victimReplayMs(
          target.client,
          bundle,
          victimGaps
            .filter((_, i) => i % Math.max(1, Math.floor(victimGaps.length / 40)) === 0)
            .slice(0, 40)
            .map(([id]) => id),
          killedAt,
        )
      : 0;
  if (replayMs > 0)
    console.error(
      `  the kill's replay work: ${victimGaps.length} victims × ${replayMs.toFixed(0)} ms (their histories up to the kill, replayed on an idle machine) = ${((victimGaps.length * replayMs) / 1000).toFixed(1)} s of workflow-thread time`,
    );
  const row: Row = {
    workers: workersN,
    runs,
    turns,
    modelCalls: workers.reduce((n, w) => n + w.calls.length, 0),
    hitRate: hits + misses === 0 ? 1 : hits / (hits + misses),
    refReads: sum((s) => s.refReads),
    queryBytes: sum((s) => s.queryBytes),
    transcriptBytes,
    baseRss: Math.max(...workers.map((w) => w.baseRss)),
    peakRss: Math.max(...workers.map((w) => w.peakRss)),
    cacheBytes: Math.max(...stats.map((s) => s.bytes)),
    p50: percentile(gaps, 50),
    p99: percentile(gaps, 99),
    fallbacks: workers.reduce((n, w) => n + w.calls.filter(([, turn, , shared]) => turn > 1 && shared === 1).length, 0),
    sharedQueue: shared,
    lost: runs - ok.length,
    seconds,
    ...(killedAt !== undefined
      ? {
          kill: {
            victims: victims.length,
            byModelCall: victimGaps.filter(([id]) => lostModel(id)).length,
            byWorkflowTask: victimGaps.filter(([id]) => lostTask(id)).length,
            victimP50: percentile(victims, 50),
            victimP90: percentile(victims, 90),
            victimP99: percentile(victims, 99),
            victimMax: Math.max(0, ...victims),
            controlP50: percentile(control, 50),
            controlP90: percentile(control, 90),
            controlP99: percentile(control, 99),
            controlMax: Math.max(0, ...control),
            stallP50: percentile(victimStalls, 50),
            stallP90: percentile(victimStalls, 90),
            stallMax: Math.max(0, ...victimStalls),
            unmeasured: victimGaps.length - victimStalls.length,
            controlStallP50: percentile(controlStalls, 50),
            controlStallMax: Math.max(0, ...controlStalls),
            replayMs,
          },
        }
      : {}),
  };
  for (const w of workers) if (w.alive) w.child.send({ type: "stop" });
  await Promise.all(workers.map((w) => (w.alive ? new Promise((r) => w.child.once("exit", r)) : undefined)));
  console.error(`  ${workersN} workers × ${runs} runs: ${JSON.stringify(row)}`);
  return row;
}

export async function scale(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const workerCounts = list(flag("scale-workers"), [1, 2, 3]);
  const runCounts = list(flag("scale-runs"), [100, 500, 1000]);
  const turns = Number(flag("scale-turns") ?? 20);
  const resultBytes = Number(flag("scale-kb") ?? 8) * 1024;
  const kill = flag("scale-kill") !== undefined;
  const dir = await mkdtemp(path.join(os.tmpdir(), "jai-scale-"));
  const bundlePath = path.join(dir, "workflow-bundle.js");
  await writeFile(bundlePath, bench.bundle.code);
  const rows: Row[] = [];
  const target: Target =
    flag("scale-cluster") !== undefined
      ? await clusterTarget()
      : { kind: "one dev server", address: bench.server.address, client: bench.client, close: async () => {} };
  try {
    for (const runs of runCounts) {
      for (const workersN of workerCounts) {
        console.error(`  scale: ${workersN} worker process(es), ${runs} runs × ${turns} turns on ${target.kind}...`);
        rows.push(
          await runConfig(target, bench.bundle, bundlePath, workersN, runs, turns, resultBytes, kill && workersN > 1),
        );
      }
    }
  } finally {
    await target.close();
  }
  const cacheMb = flag("scale-cache-mb") ?? "256 (default)";
  const markdown = [
    `### Scale (concurrent runs of ${turns} turns, ${resultBytes / 1024} KB tool results, scripted model ${flag("scale-model-ms") ? `streaming for ${flag("scale-model-ms")} ms a call` : "answering at once"}; worker processes on ${target.kind}, 2 cores; context cache ${cacheMb} MB${flag("scale-route") === "off" ? ", routing off" : ""})`,
    "",
    "Query bytes: what workers read through the `modelContext` query (cache misses and tool results produced on another worker). Hit rate: model calls whose earlier context came from the cache of the worker that served them. Turn latency: one model call of a run to its next. Shared workflow queue: Temporal's approximate backlog of the workflow task queue all workers poll, sampled every 3 s once all runs have started; a workflow task that waited past its worker's sticky timeout (10 s unless `--scale-sticky`), a dead worker's runs and a run's next task after a workflow task timeout wait there, and the worker that takes one replays the run's history first." +
      (kill
        ? ` SIGKILL (\`--scale-kill\`): the last worker is killed halfway through (runs started with a ${HEARTBEAT} heartbeat timeout and a ${WORKFLOW_TASK_TIMEOUT ?? "10s (Temporal's default)"} workflow task timeout); its victims are the runs whose last model call or whose last workflow task before it ran there (the two counts in brackets), or whose tool call was in flight there; the cost is their turn across the kill less the other runs' turn across it (p50 against p50, ..., worst against worst): what the kill added to what load did then. Stall: from the kill to the start of the run's earliest activity scheduled after it (or to its end), less the time the run's activities were running on survivors then; it leaves out the work the kill threw away and its redo and keeps every wait (timeouts, backoff, queues, replays), so it is what the recovery itself cost; the goal is judged on every victim's stall (a victim without one fails it). Victims' replay: each victim's next workflow task goes to a worker without its state, which first replays its history up to the kill; measured on 40 victims after the bench, on the idle machine: the work the kill hands to the survivors.`
        : ""),
    "",
    table(
      [
        "workers",
        "runs",
        "model calls",
        "hit rate",
        "tool results read",
        "query ÷ transcript",
        "transcripts",
        "worker RSS idle → peak",
        "cache (max)",
        "turn p50 / p99",
        "calls off their worker",
        "shared workflow queue: backlog mean / most, oldest",
        "runs lost",
        "wall time",
        ...(kill
          ? [
              "SIGKILL: victims, turn across it p50 / max (others then)",
              "SIGKILL cost p50 / p90 / p99 / worst",
              "SIGKILL stall p50 / p90 / worst (others p50 / worst)",
              "victims' replay (idle machine)",
            ]
          : []),
      ],
      rows.map((r) => [
        r.workers,
        r.runs,
        r.modelCalls,
        `${(r.hitRate * 100).toFixed(1)}%`,
        r.refReads,
        (r.queryBytes / Math.max(1, r.transcriptBytes)).toFixed(2),
        mb(r.transcriptBytes),
        `${mb(r.baseRss)} → ${mb(r.peakRss)}`,
        mb(r.cacheBytes),
        `${r.p50} / ${r.p99} ms`,
        r.fallbacks,
        r.sharedQueue.samples === 0
          ? "-"
          : `${r.sharedQueue.backlogMean.toFixed(0)} / ${r.sharedQueue.backlogMax}, ${r.sharedQueue.oldestMaxS} s`,
        r.lost,
        `${r.seconds.toFixed(0)} s`,
        ...(kill
          ? r.kill
            ? [
                `${r.kill.victims} (${r.kill.byModelCall}, ${r.kill.byWorkflowTask}): ${sec(r.kill.victimP50)} / ${sec(r.kill.victimMax)} (${sec(r.kill.controlP50)} / ${sec(r.kill.controlMax)})`,
                `${sec(killCost(r.kill).p50)} / ${sec(killCost(r.kill).p90)} / ${sec(killCost(r.kill).p99)} / ${sec(killCost(r.kill).worst)}`,
                `${sec(r.kill.stallP50)} / ${sec(r.kill.stallP90)} / ${sec(r.kill.stallMax)} (${sec(r.kill.controlStallP50)} / ${sec(r.kill.controlStallMax)})`,
                `${r.kill.victims} × ${r.kill.replayMs.toFixed(0)} ms = ${sec(r.kill.victims * r.kill.replayMs)}`,
              ]
            : ["-", "-", "-", "-"]
          : []),
      ]),
    ),
  ].join("\n");
  const worstRatio = Math.max(...rows.map((r) => r.queryBytes / Math.max(1, r.transcriptBytes)));
  const big = rows.find((r) => r.workers === 3 && r.runs === 1000);
  const lost = rows.reduce((n, r) => n + r.lost, 0);
  const goals = [
    `query bytes ÷ transcript bytes ≤ 1.2 at every size measured (worst ${worstRatio.toFixed(2)}): ${worstRatio <= 1.2 ? "met" : "NOT met"}`,
    big
      ? `hit rate ≥ 95% at 1,000 runs on 3 workers (${(big.hitRate * 100).toFixed(1)}%): ${big.hitRate >= 0.95 ? "met" : "NOT met"}`
      : "hit rate at 1,000 runs on 3 workers: not measured in this run",
    `0 runs lost (${lost}): ${lost === 0 ? "met" : "NOT met"}`,
    ...rows.flatMap((r) =>
      r.kill
        ? [
            `a SIGKILLed worker costs each of its runs ≤ heartbeat timeout (${HEARTBEAT}) + 3 s, judged on every victim's stall: the recovery, without the work the kill threw away and its redo (${r.workers} workers × ${r.runs} runs, ${r.kill.victims} victims${r.kill.unmeasured ? `, ${r.kill.unmeasured} without a figure` : ""}; stall p50 / p90 / worst ${sec(r.kill.stallP50)} / ${sec(r.kill.stallP90)} / ${sec(r.kill.stallMax)}; turn across the kill over the others' ${sec(killCost(r.kill).p50)} / ${sec(killCost(r.kill).p90)} / ${sec(killCost(r.kill).worst)} at p50 / p90 / worst against worst): ${r.kill.victims > 0 && r.kill.unmeasured === 0 && r.kill.stallMax <= HEARTBEAT_MS + 3000 ? "met" : "NOT met"}`,
          ]
        : [],
    ),
  ];
  return { markdown, goals };
}
