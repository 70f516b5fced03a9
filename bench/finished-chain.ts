/**
 * A finished 200-turn chain (continue-as-new after every turn, 8 KB tool
 * results with 8 KB details) answering from history alone, no worker:
 * state() + transcript(), result(), and the histories `npm run show` reads.
 * `npx tsx bench/finished-chain.ts` runs it alone.
 */
import { pathToFileURL } from "node:url";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type, type Context } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../src/client/client.js";
import { readChain } from "../src/client/history-view.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { benchWorker, median, openBench, table, type Bench } from "./common.js";

const TURNS = 200;
const REPEATS = 3;
const GOAL_MS = 2000;

export async function finishedChain(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const tool: AgentTool = {
    name: "page",
    description: "a page",
    parameters: Type.Object({ n: Type.Number() }),
    execute: async (_id, args: any) => ({
      content: [{ type: "text", text: `${args.n}:${"y".repeat(8000)}` }],
      details: { blob: "d".repeat(8000) },
    }),
  };
  const faux = registerFauxProvider({
    api: "bench-finished",
    provider: "bench",
    models: [{ id: "finished", contextWindow: 10_000_000, maxTokens: 1000 }],
  });
  const answer = (context: Context) => {
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    return done < TURNS
      ? fauxAssistantMessage([fauxToolCall("page", { n: done + 1 }, { id: `c${done + 1}` })], { stopReason: "toolUse" })
      : fauxAssistantMessage(`read ${done} pages`);
  };
  faux.setResponses(Array.from({ length: TURNS * 2 + 10 }, () => answer));
  const taskQueue = "bench-finished";
  const worker = await benchWorker(bench, taskQueue, [tool], [faux.getModel()]);
  const workflowId = `finished-chain-${Date.now()}`;
  await worker.runUntil(async () => {
    const h = await startAgentRun(bench.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "read pages",
      maxTurns: TURNS + 1,
      continueAsNew: { afterTurns: 1 },
    });
    await h.result();
  });
  // No worker from here on: everything below is read from the chain's histories.
  const times = { answer: [] as number[], result: [] as number[], show: [] as number[] };
  let messages = 0;
  let runs = 0;
  for (let i = 0; i < REPEATS; i++) {
    const handle = getAgentRun(bench.client, workflowId);
    let t = performance.now();
    const state = await handle.state();
    const transcript = await handle.transcript();
    times.answer.push(performance.now() - t);
    if (transcript.length !== state.messageCount)
      throw new Error(`transcript has ${transcript.length} messages, state says ${state.messageCount}`);
    messages = transcript.length;
    t = performance.now();
    await handle.result();
    times.result.push(performance.now() - t);
    t = performance.now();
    runs = (await readChain(bench.client, workflowId)).length;
    times.show.push(performance.now() - t);
  }
  const ms = (values: number[]) => `${median(values).toFixed(0)} ms`;
  const answerMs = median(times.answer);
  const markdown = [
    `### A finished chain from history alone (${TURNS} turns, continue-as-new after every turn: ${runs} runs, ${messages} messages, 8 KB tool results with 8 KB details; no worker; median of ${REPEATS})`,
    "",
    table(
      ["what", "time"],
      [
        ["state() + transcript()", ms(times.answer)],
        ["result()", ms(times.result)],
        ["every run's story (what `npm run show` reads)", ms(times.show)],
      ],
    ),
  ].join("\n");
  const goals = [
    `finished ${TURNS}-turn chain answers state() + transcript() from history in under ${GOAL_MS} ms: ${answerMs < GOAL_MS ? "met" : "NOT met"} (${answerMs.toFixed(0)} ms)`,
  ];
  return { markdown, goals };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const bench = await openBench();
  try {
    const out = await finishedChain(bench);
    console.log(`${out.markdown}\n\n${out.goals.join("\n")}`);
  } finally {
    await bench.close();
  }
}
