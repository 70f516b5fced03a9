/** Throughput: 200 concurrent runs of 5 turns on one worker. */
import { startAgentRun } from "../src/client/client.js";
import { benchWorker, pageScript, table, type Bench } from "./common.js";

const RUNS = 200;
const TURNS = 5;

export async function throughput(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const script = pageScript("throughput", TURNS - 1, 100, { runs: RUNS });
  const worker = await benchWorker(bench, "bench-throughput", [script.tool], [script.model]);
  const { done, failed, ms, turns } = await worker.runUntil(async () => {
    const t = Date.now();
    const handles = await Promise.all(
      Array.from({ length: RUNS }, (_, i) =>
        startAgentRun(bench.client, {
          taskQueue: "bench-throughput",
          workflowId: `tp-${i}-${Date.now()}`,
          model: script.model,
          prompt: "go",
        }),
      ),
    );
    const settled = await Promise.allSettled(handles.map((h) => h.result()));
    const ok = settled.flatMap((s) => (s.status === "fulfilled" && s.value.stopReason === "stop" ? [s.value] : []));
    return {
      done: ok.length,
      failed: settled.length - ok.length,
      ms: Date.now() - t,
      turns: ok.reduce((a, r) => a + r.turns, 0),
    };
  });
  const markdown = [
    `### Throughput (${RUNS} concurrent runs of ${TURNS} turns, one worker, 2 cores)`,
    "",
    table(
      ["runs started", "completed", "lost or failed", "wall time", "turns/s"],
      [[RUNS, done, failed, `${(ms / 1000).toFixed(1)} s`, (turns / (ms / 1000)).toFixed(1)]],
    ),
  ].join("\n");
  return { markdown, goals: [`${done}/${RUNS} runs completed, ${failed} lost: ${failed === 0 ? "met" : "NOT met"}`] };
}
