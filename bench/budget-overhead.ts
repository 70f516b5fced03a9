/**
 * What budgets and a fallback chain cost per turn when nothing goes wrong (issue #42: ≤ 2 %): the same 20-turn
 * run plain, with a budget of all four limits (never reached), and with a two-model chain whose first model
 * always answers. Interleaved rounds, the first discarded as warm-up; the median per-turn time of each.
 */
import { registerFauxProvider } from "@jai/ai";
import { startAgentRun } from "../src/client/client.js";
import type { AgentRunInput } from "../src/shared/contracts.js";
import { benchWorker, median, pageScript, table, type Bench } from "./common.js";

const TURNS = 20;
const ROUNDS = 8;

export async function budgetOverhead(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const script = pageScript("budget", TURNS, 100, { runs: ROUNDS * 3 + 3 });
  // The chain's second model: never called (the first always answers), resolved at setup like any model.
  const spare = registerFauxProvider({ api: "bench-spare", provider: "bench", models: [{ id: "spare" }] }).getModel();
  const taskQueue = "bench-budget";
  const worker = await benchWorker(bench, taskQueue, [script.tool], [script.model, spare]);
  const variants: Record<string, Partial<AgentRunInput>> = {
    plain: {},
    budget: { budget: { maxTokens: 100_000_000, maxCostUsd: 1_000, maxToolCalls: 10_000, maxDuration: "1h" } },
    chain: { model: [script.model, spare] },
  };
  const perTurn: Record<string, number[]> = { plain: [], budget: [], chain: [] };
  await worker.runUntil(async () => {
    for (let round = 0; round <= ROUNDS; round++) {
      for (const [name, extra] of Object.entries(variants)) {
        const t = performance.now();
        const handle = await startAgentRun(bench.client, {
          taskQueue,
          workflowId: `budget-${name}-${round}-${Date.now()}`,
          model: script.model,
          prompt: "go",
          maxTurns: TURNS + 1,
          ...extra,
        });
        const result = await handle.result();
        if (result.turns !== TURNS + 1) throw new Error(`${name}: ${result.turns} turns, ${result.stopReason}`);
        if (round > 0) perTurn[name].push((performance.now() - t) / (TURNS + 1));
      }
    }
  });
  const plain = median(perTurn.plain);
  const cost = (name: string) => (median(perTurn[name]) / plain - 1) * 100;
  const row = (name: string, what: string) => [
    what,
    median(perTurn[name]).toFixed(1),
    name === "plain" ? "—" : `${cost(name) >= 0 ? "+" : ""}${cost(name).toFixed(1)} %`,
  ];
  const markdown = [
    `### Budgets and fallbacks per turn (${TURNS} tool turns + the answer, faux model, no-op tool; median of ${ROUNDS} interleaved rounds)`,
    "",
    table(
      ["run", "ms per turn", "vs plain"],
      [
        row("plain", "no budget, one model"),
        row("budget", "a budget of all four limits (never reached)"),
        row("chain", "a two-model chain, the first answering"),
      ],
    ),
  ].join("\n");
  const goals = [
    `budgets cost ≤ 2 % per turn: ${cost("budget").toFixed(1)} % ${cost("budget") <= 2 ? "✓" : "✗"}`,
    `a fallback chain costs ≤ 2 % per turn when its first model answers: ${cost("chain").toFixed(1)} % ${cost("chain") <= 2 ? "✓" : "✗"}`,
  ];
  return { markdown, goals };
}
