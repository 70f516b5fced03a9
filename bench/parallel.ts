/** Parallel tools: 10 calls of 500 ms, parallel vs sequential vs a single call. */
import { startAgentRun } from "../src/client/client.js";
import type { ToolExecutionMode } from "../src/shared/contracts.js";
import { benchWorker, median, pageScript, table, type Bench } from "./common.js";

const RUNS = 3;

export async function parallelTools(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const ten = pageScript("ten", 1, 10, { perTurn: 10, runs: RUNS * 2 + 2, toolMs: 500 });
  const one = pageScript("one", 1, 10, { perTurn: 1, runs: RUNS + 1, toolMs: 500 });
  const worker = await benchWorker(bench, "bench-parallel", [ten.tool], [ten.model, one.model]);
  const time = async (model: typeof ten.model, mode: ToolExecutionMode) => {
    const t = Date.now();
    const h = await startAgentRun(bench.client, {
      taskQueue: "bench-parallel",
      workflowId: `par-${mode}-${Date.now()}-${Math.random()}`,
      model,
      prompt: "go",
      toolExecution: mode,
    });
    await h.result();
    return Date.now() - t;
  };
  const results = { parallel: [] as number[], sequential: [] as number[], one: [] as number[] };
  await worker.runUntil(async () => {
    await time(one.model, "parallel"); // warm-up
    for (let i = 0; i < RUNS; i++) {
      results.parallel.push(await time(ten.model, "parallel"));
      results.sequential.push(await time(ten.model, "sequential"));
      results.one.push(await time(one.model, "parallel"));
    }
  });
  const p = median(results.parallel);
  const s = median(results.sequential);
  const o = median(results.one);
  const markdown = [
    `### Parallel tools (10 calls of 500 ms in one turn, plus the answer; median of ${RUNS} runs, whole run)`,
    "",
    table(
      ["batch", "run time", "vs one call"],
      [
        ["one call", `${o} ms`, "1.00×"],
        ["10 calls, parallel", `${p} ms`, `${(p / o).toFixed(2)}×`],
        ["10 calls, sequential", `${s} ms`, `${(s / o).toFixed(2)}×`],
      ],
    ),
  ].join("\n");
  return {
    markdown,
    goals: [
      `10 parallel calls take ${(p / o).toFixed(2)}× one call (goal ≤ 1.3×): ${p / o <= 1.3 ? "met" : "NOT met"}`,
    ],
  };
}
