/** History growth: this loop vs the naive loop that sends the whole transcript with every model call. */
import type { Client } from "@temporalio/client";
import type proto from "@temporalio/proto";
import { startAgentRun } from "../src/client/client.js";
import { benchWorker, eventBytes, mb, pageScript, table, type Bench } from "./common.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;

/** Every event of a workflow's chain of runs (continue-as-new), in order. */
async function chainEvents(client: Client, workflowId: string, firstRunId: string): Promise<Event[]> {
  const all: Event[] = [];
  for (let runId: string | undefined = firstRunId; runId; ) {
    const events: Event[] = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    all.push(...events);
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return all;
}

/** Cumulative bytes and events when turn k starts, for every k (index 0 = before turn 1). */
function checkpoints(events: Event[], modelActivity: string) {
  const out: { bytes: number; events: number }[] = [];
  let bytes = 0;
  events.forEach((e, i) => {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity) out.push({ bytes, events: i });
    bytes += eventBytes(e);
  });
  out.push({ bytes, events: events.length });
  return out;
}

export async function historyGrowth(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const TURNS = 200;
  const NAIVE_TURNS = 50; // beyond this the naive run heads for Temporal's 50 MB limit
  const ours = pageScript("ours", TURNS, 8000);
  const naive = pageScript("naive", NAIVE_TURNS, 8000);
  const worker = await benchWorker(bench, "bench-growth", [ours.tool], [ours.model, naive.model]);
  const spec = {
    name: ours.tool.name,
    description: ours.tool.description,
    parameters: JSON.parse(JSON.stringify(ours.tool.parameters)),
  };

  const { oursEvents, naiveEvents } = await worker.runUntil(async () => {
    const a = await startAgentRun(bench.client, {
      taskQueue: "bench-growth",
      workflowId: `growth-ours-${Date.now()}`,
      model: ours.model,
      prompt: "read pages",
      maxTurns: TURNS + 1,
    });
    await a.result();
    const b = await bench.client.workflow.start("naiveAgentRun", {
      taskQueue: "bench-growth",
      workflowId: `growth-naive-${Date.now()}`,
      args: [{ modelRef: naive.ref, prompt: "read pages", tools: [spec], maxTurns: NAIVE_TURNS + 1 }],
    });
    await b.result();
    return {
      oursEvents: await chainEvents(
        bench.client,
        a.workflowId,
        (a.workflow as unknown as { firstExecutionRunId: string }).firstExecutionRunId,
      ),
      naiveEvents: await chainEvents(bench.client, b.workflowId, b.firstExecutionRunId),
    };
  });

  const o = checkpoints(oursEvents, "streamAssistantMessage");
  const n = checkpoints(naiveEvents, "naiveModel");
  // Naive per-turn bytes grow linearly with the turn; fit them to project past what was measured.
  const naivePerTurn = n.slice(1, NAIVE_TURNS + 1).map((c, i) => c.bytes - n[i].bytes);
  const k = naivePerTurn.length;
  const meanX = (k + 1) / 2;
  const meanY = naivePerTurn.reduce((a, b) => a + b, 0) / k;
  const slope =
    naivePerTurn.reduce((acc, y, i) => acc + (i + 1 - meanX) * (y - meanY), 0) /
    naivePerTurn.reduce((acc, _y, i) => acc + (i + 1 - meanX) ** 2, 0);
  const projectNaive = (turns: number) => {
    let total = n[NAIVE_TURNS].bytes;
    for (let t = NAIVE_TURNS + 1; t <= turns; t++) total += meanY + slope * (t - meanX);
    return total;
  };
  const perTurn = (c: { bytes: number }[], t: number) => c[t].bytes - c[t - 1].bytes;

  const rows = [10, 50, 100, 200].map((t) => {
    const naiveBytes = t <= NAIVE_TURNS ? n[t].bytes : projectNaive(t);
    return [
      t,
      mb(o[t].bytes),
      o[t].events,
      `${(perTurn(o, t) / 1024).toFixed(1)} KB`,
      t <= NAIVE_TURNS ? mb(naiveBytes) : `${mb(naiveBytes)} (projected)`,
      t <= NAIVE_TURNS
        ? `${(perTurn(n, t) / 1024).toFixed(1)} KB`
        : `${((meanY + slope * (t - meanX)) / 1024).toFixed(1)} KB (projected)`,
      `${(naiveBytes / o[t].bytes).toFixed(1)}×`,
    ];
  });
  const flat = perTurn(o, 200) / perTurn(o, 10);
  const naiveGrowth = (meanY + slope * (200 - meanX)) / perTurn(n, 10);
  const at100 = o[100].bytes;
  const markdown = [
    "### History growth (every tool result ~8 KB; one run each, history sizes are deterministic)",
    "",
    table(
      [
        "after turn",
        "this loop: history",
        "events",
        "added by that turn",
        "naive: history",
        "added by that turn",
        "naive / this",
      ],
      rows,
    ),
    "",
    `Python SDK issue 1890 scenario (100 model calls, context growing to ~${Math.round((100 * 8000) / 4 / 1000)}k tokens): this loop ${mb(at100)} of history; the naive loop ${mb(projectNaive(100))} (projected from ${NAIVE_TURNS} measured turns; Temporal terminates a run at 50 MB).`,
  ].join("\n");
  const goals = [
    `history per turn flat: turn 200 adds ${flat.toFixed(2)}× the bytes of turn 10 (goal ≤ 1.5×): ${flat <= 1.5 ? "met" : "NOT met"}`,
    `naive per turn grows ${naiveGrowth.toFixed(1)}× from turn 10 to 200 (projected; goal ≥ 10×): ${naiveGrowth >= 10 ? "met" : "NOT met"}`,
    `1890 scenario ≤ 10 MB: ${mb(at100)}: ${at100 <= 10 * 1024 * 1024 ? "met" : "NOT met"}`,
  ];
  return { markdown, goals };
}
