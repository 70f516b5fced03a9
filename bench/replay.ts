/**
 * Replay: what a worker pays to take over a run it does not hold — a dead worker's runs, a workflow task that
 * missed its sticky queue, a query on a run nobody has cached. It replays the run's history first; at saturation
 * that work is what a killed worker's runs wait for (issue 17). Measured on histories of 2, 10 and 20 turns with
 * 8 KB tool results, against a bare workflow with the same activities (Temporal's floor), and the context digest
 * the workflow computes for every message (pure JavaScript: workflow code cannot use Node's crypto).
 */
import { startAgentRun } from "../src/client/client.js";
import type { History } from "../src/worker/replay.js";
import { sha256Hex } from "../src/shared/context-digest.js";
import { benchWorker, median, pageScript, replayMsEach, table, type Bench } from "./common.js";

const TURNS = [2, 10, 20];
const REPLAYS = 20;
const ROUNDS = 3;

/** ms per replay of `history`, replayed `REPLAYS` times after a warm-up. */
const replayMs = (bundle: { code: string }, history: History) =>
  replayMsEach(
    bundle,
    Array.from({ length: REPLAYS }, (_, i) => ({ workflowId: `replay-${i}`, history })),
  );

export async function replayCost(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const queue = `bench-replay-${Date.now()}`;
  const max = Math.max(...TURNS);
  const script = pageScript("replay", max, 8 * 1024, { runs: TURNS.length + 1 });
  const worker = await benchWorker(bench, queue, [script.tool], [script.model]);
  const histories = new Map<number, { loop: History; bare: History }>();
  await worker.runUntil(async () => {
    for (const turns of TURNS) {
      // The faux model calls the tool until the context holds `max` results: cap the run at `turns` model calls.
      const handle = await startAgentRun(bench.client, {
        taskQueue: queue,
        workflowId: `${queue}-loop-${turns}`,
        model: script.model,
        prompt: "go",
        maxTurns: turns,
      });
      await handle.result();
      const bare = await bench.client.workflow.start("bareTurns", {
        taskQueue: queue,
        workflowId: `${queue}-bare-${turns}`,
        args: [turns, 2],
      });
      await bare.result();
      histories.set(turns, { loop: await handle.workflow.fetchHistory(), bare: await bare.fetchHistory() });
    }
  });
  const rows: { turns: number; events: number; loop: number; bare: number }[] = [];
  for (const turns of TURNS) {
    const { loop, bare } = histories.get(turns)!;
    const loopMs: number[] = [];
    const bareMs: number[] = [];
    // Interleaved rounds, so both see the same machine.
    for (let round = 0; round < ROUNDS; round++) {
      loopMs.push(await replayMs(bench.bundle, loop));
      bareMs.push(await replayMs(bench.bundle, bare));
    }
    rows.push({ turns, events: loop.events?.length ?? 0, loop: median(loopMs), bare: median(bareMs) });
  }
  const page = `page 1: ${"p".repeat(8 * 1024)}`;
  const digestUs: number[] = [];
  for (let round = 0; round < ROUNDS + 1; round++) {
    const t = performance.now();
    for (let i = 0; i < 200; i++) sha256Hex(page);
    if (round > 0) digestUs.push(((performance.now() - t) / 200) * 1000);
  }
  const markdown = [
    `### Replay (a run's whole history in one replay worker, ${REPLAYS} replays after a warm-up, median of ${ROUNDS} interleaved rounds; 8 KB tool results)`,
    "",
    "What a worker pays before it can go on with a run it does not hold: a dead worker's runs, a workflow task that missed its sticky queue, a query on an uncached run. The bare workflow schedules the same activities (two per turn) with empty payloads: Temporal's own cost.",
    "",
    table(
      ["turns", "events", "agent run", "bare workflow, same activities"],
      rows.map((r) => [r.turns, r.events, `${r.loop.toFixed(1)} ms`, `${r.bare.toFixed(1)} ms`]),
    ),
    "",
    `The context digest the workflow computes once per message (SHA-256 in plain JavaScript): ${median(digestUs).toFixed(0)} µs per 8 KB tool result.`,
  ].join("\n");
  const twenty = rows.find((r) => r.turns === 20)!;
  return {
    markdown,
    goals: [
      `replaying a 20-turn run (what a dead worker hands a survivor per run): ${twenty.loop.toFixed(1)} ms, ${(twenty.loop / twenty.bare).toFixed(2)}× a bare workflow with the same activities (informative; the scale bench scales it to a kill's victims)`,
    ],
  };
}
