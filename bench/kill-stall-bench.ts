/**
 * `npm run bench -- kill-stall`: what a SIGKILLed worker costs the runs it held, with Temporal's own recovery only:
 * a call in flight there waits out its heartbeat timeout; a run's next workflow task, sent to the dead worker's
 * sticky queue, waits out the sticky queue timeout (unless the server has not seen that worker poll for 10 s, its
 * fixed window, and sends it to the shared queue at once). Two worker processes (bench/scale-worker.ts) serve runs
 * whose model calls stream for a few seconds; the second is SIGKILLed while they stream, once per setting: the
 * defaults, and tighter timeouts. Each run's stall is `stallMs` (bench/kill-stall.ts): from the kill to its work
 * running again, less its work on the survivor, so every wait counts and the work the kill threw away does not.
 *
 * Sizes by flag: `--kill-stall-runs=16 --kill-stall-turns=4 --kill-stall-model-ms=3000`.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { msToNumber, type Duration } from "@temporalio/common";
import { startAgentRun } from "../src/client/client.js";
import { DEFAULT_STICKY_TIMEOUT } from "../src/worker/worker.js";
import { MODEL_DEFAULTS } from "../src/workflows/activity-proxies.js";
import { table, type Bench } from "./common.js";
import { flag, killFromHistories, poll, startWorker } from "./scale.js";
import { quantile } from "./stats.js";

/** One setting measured: the runs' heartbeat timeout (model and tool calls) and the workers' sticky queue timeout. */
interface Setting {
  name: string;
  /** Per run `modelActivity.heartbeatTimeout` and per tool `activity.heartbeatTimeout`; none: the defaults (30 s). */
  heartbeat?: Duration;
  /** The workers' `stickyQueueScheduleToStartTimeout`; none: the default (10 s). */
  sticky?: Duration;
}

const SETTINGS: Setting[] = [
  { name: "defaults" },
  { name: "heartbeat 5 s", heartbeat: "5s" },
  { name: "heartbeat 5 s, sticky 1 s", heartbeat: "5s", sticky: "1s" },
];

const DEFAULT_HEARTBEAT = MODEL_DEFAULTS.heartbeatTimeout as Duration;

/** The server treats a sticky queue no worker polled for this long as gone (Temporal's matching service; fixed). */
const STICKY_POLLER_WINDOW_MS = 10_000;

/**
 * The longest wait the setting's timeouts make: a lost call's heartbeat timeout, then its next workflow task's
 * sticky timeout while the server still counts the dead worker as polling; or the sticky timeout alone.
 */
function expectedMs(s: Setting): number {
  const heartbeat = msToNumber(s.heartbeat ?? DEFAULT_HEARTBEAT);
  const sticky = msToNumber((s.sticky ?? DEFAULT_STICKY_TIMEOUT) as Duration);
  return Math.max(heartbeat + (heartbeat < STICKY_POLLER_WINDOW_MS ? sticky : 0), sticky);
}

interface Row {
  setting: Setting;
  /** Stalls of the runs whose call in flight was lost with the worker (streaming there, or a tool call). */
  callLost: number[];
  /** Stalls of the runs that lost only their workflow task's home (their last workflow task ran there). */
  taskOnly: number[];
  /** Stalls of the other runs: what the kill's load did to them. */
  others: number[];
  /** Victims without a stall figure (neither an activity after the kill nor an end). */
  unmeasured: number;
  lost: number;
  seconds: number;
}

const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const worst = (values: number[]) => Math.max(0, ...values);
const describe = (stalls: number[]) =>
  stalls.length ? `${stalls.length}: ${sec(quantile(stalls, 0.5))} / ${sec(worst(stalls))}` : "none";

async function measure(
  bench: Bench,
  bundlePath: string,
  setting: Setting,
  size: { runs: number; turns: number; modelMs: number },
): Promise<Row> {
  const taskQueue = `kill-stall-${Date.now()}`;
  const workers = await Promise.all(
    [0, 1].map(() =>
      startWorker({
        TEMPORAL_ADDRESS: bench.server.address,
        SCALE_TASK_QUEUE: taskQueue,
        SCALE_BUNDLE: bundlePath,
        SCALE_TURNS: String(size.turns),
        SCALE_RESULT_BYTES: "1024",
        SCALE_HEARTBEAT: String(setting.heartbeat ?? DEFAULT_HEARTBEAT),
        SCALE_MODEL_MS: String(size.modelMs),
        ...(setting.sticky ? { SCALE_STICKY: String(setting.sticky) } : {}),
      }),
    ),
  );
  const started = Date.now();
  const handles = await Promise.all(
    Array.from({ length: size.runs }, (_, i) =>
      startAgentRun(bench.client, {
        taskQueue,
        workflowId: `${taskQueue}-${i}`,
        model: "bench/scale",
        prompt: "go",
        maxTurns: size.turns + 5,
        ...(setting.heartbeat ? { modelActivity: { heartbeatTimeout: setting.heartbeat } } : {}),
      }),
    ),
  );
  // Killed while the runs' calls stream: once half the runs have begun their second model call, a third of a call
  // later (a turn is a model call, then an instant tool call).
  const killed = workers[1];
  for (;;) {
    await poll(workers);
    if (workers.reduce((n, w) => n + w.calls.length, 0) >= size.runs * 1.5) break;
    if (Date.now() - started > 120_000) throw new Error("kill-stall: the runs did not get going");
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, size.modelMs / 3));
  await poll(workers);
  killed.child.kill("SIGKILL");
  const killedAt = Date.now();
  const settled = await Promise.allSettled(handles.map((h) => h.result()));
  const seconds = (Date.now() - started) / 1000;
  const lost = settled.filter(
    (s) => s.status !== "fulfilled" || s.value.stopReason !== "stop" || s.value.turns !== size.turns,
  ).length;
  // Victims: runs whose call in flight was lost (their last model call before the kill ran on the killed worker, or
  // an activity of theirs timed out or was retried after it), and runs whose last workflow task before the kill ran
  // there (their next one is sent to its sticky queue).
  const lastCall = new Map<string, { at: number; onKilled: boolean }>();
  for (const w of workers)
    for (const [id, , at] of w.calls)
      if (at <= killedAt && at >= (lastCall.get(id)?.at ?? 0)) lastCall.set(id, { at, onKilled: w === killed });
  const ids = handles.map((h) => h.workflowId);
  const found = await killFromHistories(bench.client, ids, killedAt, `scale-worker-${killed.child.pid}`);
  const callLost = ids.filter((id) => lastCall.get(id)?.onKilled || found.lostActivity.has(id));
  const taskOnly = ids.filter((id) => found.on.has(id) && !callLost.includes(id));
  const victims = new Set([...callLost, ...taskOnly]);
  const stalls = (of: string[]) => of.flatMap((id) => (found.stalls.has(id) ? [found.stalls.get(id)!] : []));
  const row: Row = {
    setting,
    callLost: stalls(callLost),
    taskOnly: stalls(taskOnly),
    others: stalls(ids.filter((id) => !victims.has(id))),
    unmeasured: victims.size - stalls([...victims]).length,
    lost,
    seconds,
  };
  for (const w of workers) if (w.alive) w.child.send({ type: "stop" });
  await Promise.all(workers.map((w) => (w.alive ? new Promise((r) => w.child.once("exit", r)) : undefined)));
  console.error(
    `  ${setting.name}: call lost ${describe(row.callLost)}; workflow task only ${describe(row.taskOnly)}; others ${describe(row.others)}; ${lost} runs lost, ${seconds.toFixed(0)} s`,
  );
  return row;
}

export async function killStall(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const size = {
    runs: Number(flag("kill-stall-runs") ?? 16),
    turns: Number(flag("kill-stall-turns") ?? 4),
    modelMs: Number(flag("kill-stall-model-ms") ?? 3000),
  };
  const dir = await mkdtemp(path.join(os.tmpdir(), "jai-kill-stall-"));
  const bundlePath = path.join(dir, "workflow-bundle.js");
  await writeFile(bundlePath, bench.bundle.code);
  const rows: Row[] = [];
  try {
    for (const setting of SETTINGS) {
      console.error(`  kill-stall: ${setting.name}...`);
      rows.push(await measure(bench, bundlePath, setting, size));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const markdown = [
    `### A SIGKILLed worker (2 worker processes, ${size.runs} runs of ${size.turns} turns, model calls streaming ${size.modelMs / 1000} s, the second worker SIGKILLed while they stream)`,
    "",
    "Stall (`bench/kill-stall.ts`): from the kill to the start of the run's next activity (or its end), less the time its activities ran on the survivor then: every wait (heartbeat timeout, sticky queue timeout, backoff, replay), not the work the kill threw away. Call lost: runs whose model call was streaming on the killed worker (or whose call there was retried). Workflow task only: runs whose last workflow task ran there, their call elsewhere. Expected worst: a lost call's heartbeat timeout, plus the sticky timeout when the heartbeat is under the server's 10 s window for a silent sticky queue (past it the server sends the task to the shared queue at once); a workflow task alone waits the sticky timeout.",
    "",
    table(
      [
        "setting",
        "heartbeat / sticky timeout",
        "call lost: runs: stall p50 / worst",
        "workflow task only: runs: stall p50 / worst",
        "others: runs: stall p50 / worst",
        "expected worst",
        "runs lost",
        "wall time",
      ],
      rows.map((r) => [
        r.setting.name,
        `${r.setting.heartbeat ?? `${DEFAULT_HEARTBEAT} (default)`} / ${r.setting.sticky ?? `${DEFAULT_STICKY_TIMEOUT} (default)`}`,
        describe(r.callLost),
        describe(r.taskOnly),
        describe(r.others),
        sec(expectedMs(r.setting)),
        r.lost,
        `${r.seconds.toFixed(0)} s`,
      ]),
    ),
  ].join("\n");
  const goals = rows.map((r) => {
    const victims = [...r.callLost, ...r.taskOnly];
    const bound = expectedMs(r.setting) + 3000;
    const met = victims.length > 0 && r.unmeasured === 0 && r.lost === 0 && worst(victims) <= bound;
    return `SIGKILL, ${r.setting.name}: every victim goes on within the expected worst + 3 s (${sec(bound)}; worst ${sec(worst(victims))}, ${victims.length} victims${r.unmeasured ? `, ${r.unmeasured} without a figure` : ""}, ${r.lost} runs lost): ${met ? "met" : "NOT met"}`;
  });
  return { markdown, goals };
}
