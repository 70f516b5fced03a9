/**
 * `npm run bench -- --peers`: this loop and Temporal's AI SDK integration side
 * by side on one dev server, the same scenario (scripted model answering at
 * once, tool results of ~100 bytes, 20 tool turns), runs interleaved (ours
 * with regular tool activities, ours with the tool marked fast, the peer, in
 * rotating order) so machine load hits all three alike.
 */
import { readFileSync } from "node:fs";
import { Client } from "@temporalio/client";
import type proto from "@temporalio/proto";
import type { Api, Model } from "@jai/ai";
import { startAgentRun } from "../src/client/client.js";
import { createAgentWorker } from "../src/worker/worker.js";
import type { AgentTool } from "../src/shared/contracts.js";
import {
  eventBytes,
  mb,
  median,
  pageScript,
  quantile,
  perTurnRequests,
  persistenceRequests,
  requestsBetween,
  table,
  writesAndReads,
  type Bench,
} from "./common.js";
import { openAiSdkPeer, type Peer } from "./peers.js";
import { slowestTurns } from "./turn-breakdown.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;

const TURNS = 20;
const RUNS = 5;
const GROWTH_TURNS = 100;
const TP_RUNS = 200;
const TP_TURNS = 5;
const TP_ROUNDS = 3;
/** `--vs-phases=small,tp` runs only those phases (to iterate on one; the report is then not written). */
export const VS_PHASES = process.argv
  .find((a) => a.startsWith("--vs-phases="))
  ?.slice("--vs-phases=".length)
  .split(",");
const wantPhase = (label: string) => !VS_PHASES || VS_PHASES.includes(label);
/** `--vs-contenders=0,2` runs only those contenders' throughput rounds (0 ours with activities, 1 fast, 2 the peer). */
const VS_CONTENDERS = process.argv
  .find((a) => a.startsWith("--vs-contenders="))
  ?.slice("--vs-contenders=".length)
  .split(",")
  .map(Number);
const wantContender = (c: number) => !VS_CONTENDERS || VS_CONTENDERS.includes(c);
/** `--vs-sticky=10s`: our workers' sticky queue timeout (default: the product's). */
const VS_STICKY = process.argv.find((a) => a.startsWith("--vs-sticky="))?.slice("--vs-sticky=".length);
/** `--vs-worker-options='{"maxConcurrentWorkflowTaskPolls":20}'`: more of our workers' options (to try a tuning). */
const VS_WORKER_OPTIONS = JSON.parse(
  process.argv.find((a) => a.startsWith("--vs-worker-options="))?.slice("--vs-worker-options=".length) ?? "{}",
) as Record<string, unknown>;

interface Contender {
  name: string;
  /** Name of the model activity in its history. */
  modelActivity: string;
  /** One run: wall time, when the provider saw each request, the history. */
  run(
    id: string,
    turns: number,
    bytes: number,
  ): Promise<{ startedAt: number; ms: number; requests: number[]; workflowId: string; runId: string }>;
  many(
    id: string,
    runs: number,
    turns: number,
    bytes: number,
  ): Promise<{ ms: number; runs: ({ requests: number[]; steps: number; workflowId?: string } | { error: string })[] }>;
  /** The queue its workflows and tool calls are on (its model calls too, unless routed). */
  sharedQueue: string;
}

async function historyOf(client: Client, workflowId: string, runId: string): Promise<Event[]> {
  const all: Event[] = [];
  for (let id: string | undefined = runId; id; ) {
    const events: Event[] = (await client.workflow.getHandle(workflowId, id).fetchHistory()).events ?? [];
    all.push(...events);
    id = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return all;
}

/** Events between consecutive model calls (tool turns), and history bytes before model call k. */
function shape(events: Event[], modelActivity: string) {
  const at: number[] = [];
  const bytesBefore: number[] = [];
  let bytes = 0;
  events.forEach((e, i) => {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity) {
      at.push(i);
      bytesBefore.push(bytes);
    }
    bytes += eventBytes(e);
  });
  bytesBefore.push(bytes);
  return { perTurn: median(at.slice(1).map((x, i) => x - at[i])), bytesBefore };
}

/** CPU seconds (user + system) a process has used so far; NaN where /proc cannot tell. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return NaN;
  }
}

function ours(bench: Bench, taskQueue: string, script: ReturnType<typeof pageScript>, name: string): Contender {
  // The bench process hosts the workers: runs start eagerly, through a client on the workers' connection.
  const client = new Client({ connection: bench.connection });
  const once = async (workflowId: string, turns: number) => {
    const startedAt = Date.now();
    const handle = await startAgentRun(client, {
      taskQueue,
      workflowId,
      model: script.model,
      prompt: "go",
      maxTurns: turns + 1,
      eagerStart: true,
    });
    const result = await handle.result();
    const requests = script.requests.get(workflowId) ?? [];
    script.requests.delete(workflowId);
    return {
      startedAt,
      ms: Date.now() - startedAt,
      requests,
      workflowId,
      runId: (handle.workflow as unknown as { firstExecutionRunId: string }).firstExecutionRunId,
      steps: result.turns,
    };
  };
  return {
    name,
    modelActivity: "streamAssistantMessage",
    sharedQueue: taskQueue,
    run: (id, turns) => once(id, turns),
    async many(id, runs, turns) {
      const t = Date.now();
      const settled = await Promise.allSettled(Array.from({ length: runs }, (_, i) => once(`${id}-${i}`, turns)));
      return {
        ms: Date.now() - t,
        runs: settled.map((s) => (s.status === "fulfilled" ? s.value : { error: String(s.reason) })),
      };
    },
  };
}

function peerContender(peer: Peer): Contender {
  return {
    name: peer.name,
    modelActivity: "invokeModel",
    sharedQueue: peer.taskQueue,
    run: (id, turns, bytes) => peer.run(id, turns, bytes),
    many: (id, runs, turns, bytes) => peer.many(id, runs, turns, bytes),
  };
}

/** Scripts calling the tool `turns` times per run, for a regular and a fast tool. */
function scripts(label: string, turns: number, bytes: number, runs: number) {
  const regular = pageScript(`vs-${label}`, turns, bytes, { runs: runs * 2 });
  const fastTool: AgentTool = { ...regular.tool, fast: true };
  return { regular, fastTool };
}

export async function versus(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const peer = await openAiSdkPeer(bench, "bench-vs-peer");
  const small = scripts("small", TURNS, 100, (RUNS + 1) * 2);
  const big = scripts("big", GROWTH_TURNS, 8000, 4);
  const tp = scripts("tp", TP_TURNS - 1, 100, TP_RUNS * 2);
  // Our workers live only for their phase (two at a time: regular and fast), like the peer's one worker process.
  // The product's own worker (createAgentWorker: model calls routed to its queue, its tuning), as users run it.
  const agentWorker = (taskQueue: string, tool: AgentTool, model: Model<Api>) =>
    createAgentWorker({
      connection: bench.connection,
      taskQueue,
      tools: [tool],
      models: [model],
      workflowBundle: bench.bundle,
      workerOptions: {
        ...VS_WORKER_OPTIONS,
        ...(VS_STICKY ? { stickyQueueScheduleToStartTimeout: VS_STICKY } : {}),
      },
    });
  const phaseWorkers = async (label: "small" | "big" | "tp", set: ReturnType<typeof scripts>) => [
    await agentWorker(`bench-vs-${label}-regular`, set.regular.tool, set.regular.model),
    await agentWorker(`bench-vs-${label}-fast`, set.fastTool, set.regular.model),
  ];
  const stamp = Date.now();
  type Row = { ms: number[]; first: number[]; events: number[] };
  const contenders = [
    {
      small: ours(bench, "bench-vs-small-regular", small.regular, "this loop, tools as activities"),
      big: ours(bench, "bench-vs-big-regular", big.regular, ""),
      tp: ours(bench, "bench-vs-tp-regular", tp.regular, ""),
    },
    {
      small: ours(bench, "bench-vs-small-fast", small.regular, "this loop, tool marked fast (local activity)"),
      big: ours(bench, "bench-vs-big-fast", big.regular, ""),
      tp: ours(bench, "bench-vs-tp-fast", tp.regular, ""),
    },
    { small: peerContender(peer), big: peerContender(peer), tp: peerContender(peer) },
  ];
  const rows: Row[] = contenders.map(() => ({ ms: [], first: [], events: [] }));
  const peerIndex = contenders.length - 1;
  const growth: number[][] = [];
  const through: {
    turnsPerS: number;
    all: number[];
    p50: number;
    p90: number;
    p99: number;
    lost: number;
    wall: number;
    /** The dev server's database requests per turn in the throughput rounds (median), writes and reads. */
    writes: number;
    reads: number;
  }[] = [];

  const phase = async (label: "small" | "big" | "tp", set: ReturnType<typeof scripts>, body: () => Promise<void>) => {
    if (!wantPhase(label)) return;
    const [a, b] = await phaseWorkers(label, set);
    await a.runUntil(b.runUntil(body));
  };
  try {
    await phase("small", small, async () => {
      for (let round = 0; round <= RUNS; round++) {
        // Rotating order; round 0 warms every worker up and is discarded.
        for (let k = 0; k < contenders.length; k++) {
          const c = (round + k) % contenders.length;
          const contender = contenders[c].small;
          const run = await contender.run(`vs-${c}-${round}-${stamp}`, TURNS, 100);
          if (round === 0) continue;
          rows[c].ms.push(run.ms / (TURNS + 1));
          rows[c].first.push(run.requests[0] - run.startedAt);
          rows[c].events.push(
            shape(await historyOf(bench.client, run.workflowId, run.runId), contender.modelActivity).perTurn,
          );
        }
      }
      console.error(
        `versus: ms/turn ${rows.map((r) => median(r.ms).toFixed(1)).join(" / ")}, first request ${rows.map((r) => median(r.first)).join(" / ")} ms, events/turn ${rows.map((r) => median(r.events)).join(" / ")}`,
      );
    });
    console.error("versus: history growth...");
    await phase("big", big, async () => {
      for (let c = 0; c < contenders.length; c++) {
        const run = await contenders[c].big.run(`vs-growth-${c}-${stamp}`, GROWTH_TURNS, 8000);
        growth.push(
          shape(await historyOf(bench.client, run.workflowId, run.runId), contenders[c].big.modelActivity).bytesBefore,
        );
      }
      console.error(`versus: history at 100 turns ${growth.map((g) => mb(g[100] ?? NaN)).join(" / ")}`);
    });
    console.error("versus: throughput...");
    await phase("tp", tp, async () => {
      // Rounds in rotating order, like the turn timing, so a slow spell of the shared machine hits all alike.
      const batches: {
        turnsPerS: number;
        gaps: { workflowId: string; index: number; ms: number }[];
        lost: number;
        wall: number;
        writes?: number;
        reads?: number;
      }[][] = contenders.map(() => []);
      // A discarded warm-up batch each first (a quarter of the runs), as the turn timing discards its first round:
      // otherwise round 0's first contender alone pays for a cold worker and server (9.5 against 17-20 turns/s).
      for (let c = 0; c < contenders.length; c++)
        if (wantContender(c)) await contenders[c].tp.many(`vs-tp-warm-${c}-${stamp}`, TP_RUNS / 4, TP_TURNS - 1, 100);
      for (let round = 0; round < TP_ROUNDS; round++) {
        for (let k = 0; k < contenders.length; k++) {
          const c = (round + k) % contenders.length;
          if (!wantContender(c)) continue;
          const serverCpu = cpuSeconds(bench.server.pid);
          // The worker's CPU: ours run in this process (the client too), the peer's in its own.
          const workerPid = c === peerIndex ? peer.pid : process.pid;
          const workerCpu = cpuSeconds(workerPid);
          const requestsBefore = await persistenceRequests(bench.server);
          const batchStart = Date.now();
          const out = await contenders[c].tp.many(`vs-tp-${c}-${round}-${stamp}`, TP_RUNS, TP_TURNS - 1, 100);
          const ok = out.runs.filter(
            (r): r is { requests: number[]; steps: number; workflowId: string } =>
              !("error" in r) && r.requests.length === TP_TURNS,
          );
          batches[c].push({
            turnsPerS: (ok.length * TP_TURNS) / (out.ms / 1000),
            gaps: ok.flatMap((r) =>
              r.requests.slice(1).map((t, index) => ({ workflowId: r.workflowId, index, ms: t - r.requests[index] })),
            ),
            lost: TP_RUNS - ok.length,
            wall: out.ms,
          });
          // Where a turn's work goes: the dev server's CPU per 1,000 turns (turns are bound by its persistence).
          const serverPerK = ((cpuSeconds(bench.server.pid) - serverCpu) / (ok.length * TP_TURNS)) * 1000;
          const workerPerK = ((cpuSeconds(workerPid) - workerCpu) / (ok.length * TP_TURNS)) * 1000;
          console.error(
            `versus: throughput round ${round} ${contenders[c].small.name}: ${batches[c].at(-1)!.turnsPerS.toFixed(1)} turns/s, CPU per 1,000 turns: server ${serverPerK.toFixed(1)} s, worker ${workerPerK.toFixed(1)} s`,
          );
          // And what it asked of its database per turn, by operation (on disk, each write waits for an fsync).
          const requests = requestsBetween(requestsBefore, await persistenceRequests(bench.server));
          const turnsDone = ok.length * TP_TURNS;
          const { writes, reads } = writesAndReads(requests);
          Object.assign(batches[c].at(-1)!, { writes: writes / turnsDone, reads: reads / turnsDone });
          console.error(`  database requests per turn: ${perTurnRequests(requests, turnsDone)}`);
          const gaps = batches[c].at(-1)!.gaps;
          const latencies = gaps.map((g) => g.ms);
          const at = (q: number) => quantile(latencies, q).toFixed(0);
          console.error(`  turn latency p50 / p90 / p99: ${at(0.5)} / ${at(0.9)} / ${at(0.99)} ms`);
          // The batch's wall beyond its turns: runs all start at once, so how late their first model request came
          // and how long the batch took after its last request (the answer's turn and the results) count too.
          const firsts = ok.map((r) => r.requests[0] - batchStart);
          const lastRequest = Math.max(...ok.map((r) => r.requests.at(-1)!));
          console.error(
            `  batch ${(out.ms / 1000).toFixed(1)} s: start → first model request p50 / p90 / max ${quantile(firsts, 0.5).toFixed(0)} / ${quantile(firsts, 0.9).toFixed(0)} / ${Math.max(...firsts).toFixed(0)} ms, last model request → batch end ${(batchStart + out.ms - lastRequest).toFixed(0)} ms`,
          );
          // Where the slowest 1 % of turns spent their time (#44: a routed call waiting on a busy worker's queue).
          const tp = contenders[c].tp;
          console.error(`  ${await slowestTurns(bench.client, gaps, 0.01, tp.modelActivity, tp.sharedQueue)}`);
        }
      }
      for (const b of batches) {
        const latencies = b.flatMap((x) => x.gaps.map((g) => g.ms));
        through.push({
          turnsPerS: median(b.map((x) => x.turnsPerS)),
          all: b.map((x) => x.turnsPerS),
          p50: quantile(latencies, 0.5),
          p90: quantile(latencies, 0.9),
          p99: quantile(latencies, 0.99),
          lost: b.reduce((n, x) => n + x.lost, 0),
          wall: median(b.map((x) => x.wall)),
          writes: median(b.map((x) => x.writes ?? NaN)),
          reads: median(b.map((x) => x.reads ?? NaN)),
        });
      }
    });
  } finally {
    await peer.close();
  }

  const names = contenders.map((c) => c.small.name);
  const peerRow = rows.length - 1;
  const msOf = (c: number) => median(rows[c].ms);
  const firstOf = (c: number) => median(rows[c].first);
  const at = (c: number, t: number) => (growth[c]?.[t] !== undefined ? mb(growth[c][t]) : "—");
  const none = { turnsPerS: NaN, all: [], p50: NaN, p90: NaN, p99: NaN, lost: NaN, wall: NaN, writes: NaN, reads: NaN };
  while (through.length < contenders.length) through.push(none);
  const markdown = [
    `### Side by side with Temporal's AI SDK integration (\`npm run bench -- --peers\`)`,
    "",
    `Same dev server, same scripted model (answers at once), ${TURNS} tool turns + the answer with ~100-byte tool results: median of ${RUNS} runs, interleaved in rotating order (after a discarded warm-up round) so the load of the shared 2-core machine hits all alike. History: one run of ${GROWTH_TURNS} turns with ~8 KB tool results. Throughput: ${TP_RUNS} concurrent runs of ${TP_TURNS} turns on one worker each, a discarded warm-up batch of ${TP_RUNS / 4} runs each, then ${TP_ROUNDS} rounds of one batch per contender in rotating order (median turns/s, every round in brackets; lost: all rounds); turn latency is the time between a run's consecutive model requests. Our workers are \`createAgentWorker\` workers (model calls routed to their own queue) in the bench's process (two at a time), and it starts runs with \`eagerStart\` through their connection; the peer's worker runs in its own process (@temporalio/* 1.23.0). The dev server caches search attributes as a deployed server does (\`start-dev\` alone reads them from its database on every use; bench/common.ts).`,
    "",
    table(
      [
        "",
        "ms per turn",
        "vs peer",
        "start → first model request",
        "events per tool turn",
        "history at 10 / 60 / 100 turns",
        "turns/s (200 runs; median of 3 rounds)",
        "turn latency p50 / p90 / p99",
        "runs lost",
        "server database writes / reads per turn",
      ],
      contenders.map((_, c) => [
        names[c],
        msOf(c).toFixed(1),
        `${(msOf(c) / msOf(peerRow)).toFixed(2)}×`,
        `${firstOf(c).toFixed(0)} ms`,
        median(rows[c].events),
        `${at(c, 10)} / ${at(c, 60)} / ${at(c, 100)}`,
        `${through[c].turnsPerS.toFixed(1)} (${through[c].all.map((t) => t.toFixed(1)).join(", ")})`,
        `${through[c].p50.toFixed(0)} / ${through[c].p90.toFixed(0)} / ${through[c].p99.toFixed(0)} ms`,
        through[c].lost,
        `${through[c].writes.toFixed(1)} / ${through[c].reads.toFixed(1)}`,
      ]),
    ),
  ].join("\n");
  const r = (c: number) => msOf(c) / msOf(peerRow);
  const goals = [
    `ms per tool turn, tool marked fast: ${r(1).toFixed(2)}× the AI SDK integration (goal ≤ 0.8×): ${r(1) <= 0.8 ? "met" : "NOT met"}`,
    `ms per tool turn, tools as activities: ${r(0).toFixed(2)}× the AI SDK integration (goal ≤ 1.0×): ${r(0) <= 1.0 ? "met" : "NOT met"}`,
    `start → first model request: ${(firstOf(0) / firstOf(peerRow)).toFixed(2)}× the peer's (goal ≤ 1.0×): ${firstOf(0) <= firstOf(peerRow) ? "met" : "NOT met"}`,
    `events per tool turn with a fast tool: ${median(rows[1].events)} (goal ≤ 8): ${median(rows[1].events) <= 8 ? "met" : "NOT met"}`,
    `throughput, 200 runs of 5 turns (median of ${TP_ROUNDS} rounds): ${(through[1].turnsPerS / through[peerRow].turnsPerS).toFixed(2)}× the peer's with a fast tool (goal ≥ 1.5×): ${through[1].turnsPerS >= 1.5 * through[peerRow].turnsPerS ? "met" : "NOT met"}; ${(through[0].turnsPerS / through[peerRow].turnsPerS).toFixed(2)}× with tools as activities (goal ≥ 1.05×): ${through[0].turnsPerS >= 1.05 * through[peerRow].turnsPerS ? "met" : "NOT met"}, where both loops ask the server for the same work per turn (database writes per turn ${through[0].writes.toFixed(1)} against the peer's ${through[peerRow].writes.toFixed(1)}; on a disk-backed server each write waits for an fsync); runs lost ${through.map((t) => t.lost).join(" / ")} of ${TP_RUNS * TP_ROUNDS} each: ${through.every((t) => t.lost === 0) ? "met" : "NOT met"}`,
    ...[0, 1].map((c) => {
      const ok = through[c].p99 <= through[peerRow].p99;
      return `p99 turn latency at ${TP_RUNS} runs, ${c === 0 ? "tools as activities" : "tool marked fast"}: ${through[c].p99.toFixed(0)} ms against the peer's ${through[peerRow].p99.toFixed(0)} ms in the same rounds (goal ≤ the peer's): ${ok ? "met" : "NOT met"}`;
    }),
  ];
  return { markdown, goals };
}
