/** Per-turn overhead: this loop vs a bare Temporal workflow (the floor) vs pi-agent-core in process (no durability). */
import { runAgentLoop } from "@mariozechner/pi-agent-core";
import { streamSimple } from "@jai/ai";
import { startAgentRun } from "../src/client/client.js";
import { benchWorker, median, pageScript, table, type Bench } from "./common.js";

const TURNS = 20;
const RUNS = 5;

export async function overhead(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const script = pageScript("overhead", TURNS, 100, { runs: RUNS * 2 });
  const worker = await benchWorker(bench, "bench-overhead", [script.tool], [script.model]);
  const loopMs: number[] = [];
  const bareMs: number[] = [];
  await worker.runUntil(async () => {
    for (let i = 0; i < RUNS + 1; i++) {
      // Interleaved, first round discarded as warm-up, so both see the same machine state.
      let t = Date.now();
      const handle = await startAgentRun(bench.client, {
        taskQueue: "bench-overhead",
        workflowId: `overhead-${i}-${Date.now()}`,
        model: script.model,
        prompt: "go",
        maxTurns: TURNS + 1,
      });
      await handle.result();
      const loop = Date.now() - t;
      t = Date.now();
      // The same activities in the same order: setup, then per turn a model call and a tool call (none after the answer).
      await bench.client.workflow.execute("bareTurns", {
        taskQueue: "bench-overhead",
        workflowId: `bare-${i}-${Date.now()}`,
        args: [TURNS, 2],
      });
      const bare = Date.now() - t;
      if (i > 0) {
        loopMs.push(loop / (TURNS + 1));
        bareMs.push(bare / (TURNS + 1));
      }
    }
  });
  const piMs: number[] = [];
  for (let i = 0; i < RUNS + 1; i++) {
    const t = Date.now();
    await runAgentLoop(
      [{ role: "user", content: "go", timestamp: Date.now() }],
      { systemPrompt: "", messages: [], tools: [{ ...script.tool, label: script.tool.name } as never] },
      { model: script.model as never, convertToLlm: (m: unknown[]) => m as never },
      () => {},
      undefined,
      streamSimple as never,
    );
    if (i > 0) piMs.push((Date.now() - t) / (TURNS + 1));
  }
  const loop = median(loopMs);
  const bare = median(bareMs);
  const pi = median(piMs);
  const markdown = [
    `### Per-turn overhead (${TURNS} tool turns + the answer, faux model answering at once, no-op tool; median of ${RUNS} runs)`,
    "",
    table(
      ["loop", "ms per turn", "vs this loop"],
      [
        ["this loop (Temporal workflow)", loop.toFixed(1), "1.00×"],
        ["bare Temporal workflow, same activities (the floor)", bare.toFixed(1), `${(bare / loop).toFixed(2)}×`],
        ["pi-agent-core in process (no durability)", pi.toFixed(2), `${(pi / loop).toFixed(3)}×`],
      ],
    ),
  ].join("\n");
  const ratio = loop / bare;
  return {
    markdown,
    goals: [
      `overhead vs the Temporal floor: ${ratio.toFixed(2)}× (goal ≤ 1.15×): ${ratio <= 1.15 ? "met" : "NOT met"}`,
    ],
  };
}
