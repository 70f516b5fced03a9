/**
 * How fast a cancel takes effect (goal: < 2 s each), measured here rather than asserted by the suite, whose
 * verdicts must not depend on how busy the machine is (test/server/people.test.ts checks what happens, not how
 * fast): cancel → a streaming model call aborted and the run ended (the partial message kept), and cancel → a
 * running tool's AbortSignal fired. Cancellation reaches an activity in a heartbeat's answer: the activity
 * heartbeats at most 1 s apart (src/worker/activities/heartbeat.ts) and the worker's throttle is 1 s.
 */
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type } from "@jai/ai";
import { startAgentRun } from "../src/client/client.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { createAgentWorker } from "../src/worker/worker.js";
import { median, table, type Bench } from "./common.js";

const ROUNDS = 5;
const GOAL_MS = 2000;

/** A promise and the function that resolves it. */
function signal<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

export async function cancelLatency(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const stream: number[] = [];
  const tool: number[] = [];
  const faux = registerFauxProvider({
    api: "bench-cancel",
    provider: "bench",
    models: [{ id: "cancel" }],
    tokensPerSecond: 100,
  });
  let streaming = signal();
  let entered = signal();
  let aborted = signal<number>();
  const listening: AgentTool = {
    name: "listening",
    description: "runs until aborted",
    parameters: Type.Object({}),
    execute: (_id, _args, abort) =>
      new Promise((_, reject) => {
        entered.resolve();
        abort?.addEventListener("abort", () => {
          aborted.resolve(performance.now());
          reject(new Error("aborted"));
        });
      }),
  };
  const worker = await createAgentWorker({
    connection: bench.connection,
    taskQueue: "bench-cancel",
    workflowBundle: bench.bundle,
    tools: [listening],
    models: [faux.getModel()],
    events: false,
    onEvent: (event) => {
      if (event.type === "message_update") streaming.resolve();
    },
  });
  await worker.runUntil(async () => {
    for (let round = 0; round <= ROUNDS; round++) {
      // A model streaming ~40 s of text, cancelled at its first delta.
      faux.setResponses([fauxAssistantMessage("word ".repeat(3000))]);
      streaming = signal();
      const talk = await startAgentRun(bench.client, {
        taskQueue: "bench-cancel",
        workflowId: `bench-cancel-stream-${round}-${Date.now()}`,
        model: faux.getModel(),
        prompt: "talk",
      });
      await streaming.promise;
      let t = performance.now();
      await talk.cancel();
      const ended = await talk.result();
      if (ended.stopReason !== "aborted") throw new Error(`streaming run ended ${ended.stopReason}`);
      if (round > 0) stream.push(performance.now() - t);

      // A tool that runs until its signal fires, cancelled once it runs.
      faux.setResponses([fauxAssistantMessage([fauxToolCall("listening", {})], { stopReason: "toolUse" })]);
      entered = signal();
      aborted = signal<number>();
      const work = await startAgentRun(bench.client, {
        taskQueue: "bench-cancel",
        workflowId: `bench-cancel-tool-${round}-${Date.now()}`,
        model: faux.getModel(),
        prompt: "work",
      });
      await entered.promise;
      t = performance.now();
      await work.cancel();
      const sawAbort = await aborted.promise;
      await work.result();
      if (round > 0) tool.push(sawAbort - t);
    }
  });
  faux.unregister();
  const row = (what: string, ms: number[]) => [
    what,
    `${median(ms).toFixed(0)} ms`,
    `${Math.max(...ms).toFixed(0)} ms`,
    median(ms) < GOAL_MS ? "met" : "NOT met",
  ];
  const markdown = [
    `### Cancel latency (median and slowest of ${ROUNDS} runs each, after a warm-up; goal < ${GOAL_MS / 1000} s)`,
    "",
    table(
      ["from `handle.cancel()` to", "median", "slowest", "goal"],
      [
        row("a streaming model call aborted and its run ended (partial message kept)", stream),
        row("a running tool's AbortSignal fired", tool),
      ],
    ),
  ].join("\n");
  return {
    markdown,
    goals: [
      `cancel → streaming model aborted and run ended < 2 s: median ${median(stream).toFixed(0)} ms: ${median(stream) < GOAL_MS ? "met" : "NOT met"}`,
      `cancel → running tool's AbortSignal < 2 s: median ${median(tool).toFixed(0)} ms: ${median(tool) < GOAL_MS ? "met" : "NOT met"}`,
    ],
  };
}
