/**
 * One worker process of the scale bench (forked by bench/scale.ts): the real
 * `createAgentWorker`, a scripted model answering at once from the context, a
 * tool returning a fixed-size page. Answers the parent's IPC requests for its
 * cache stats, memory and model-call log.
 */
import { Context } from "@temporalio/activity";
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import {
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  registerFauxProvider,
  Type,
  type Context as ModelContext,
} from "@jai/ai";
import type { AgentTool } from "../src/shared/contracts.js";
import { createAgentWorker } from "../src/worker/worker.js";

const env = (name: string) => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};

Runtime.install({ logger: new DefaultLogger("ERROR") });
const turns = Number(env("SCALE_TURNS"));
const body = "p".repeat(Number(env("SCALE_RESULT_BYTES")));
const heartbeat = env("SCALE_HEARTBEAT");
const taskQueue = env("SCALE_TASK_QUEUE");

/** Per model call: workflow id, turn, time, and whether it came through this worker's own queue. */
const calls: [string, number, number, 0 | 1][] = [];

const tool: AgentTool = {
  name: "fetch_page",
  description: "returns a page",
  parameters: Type.Object({ n: Type.Number() }),
  activity: { heartbeatTimeout: heartbeat },
  execute: async (_id, args: any) => ({ content: [{ type: "text", text: `page ${args.n}: ${body}` }] }),
};

/**
 * SCALE_MODEL_MS: how long a model call streams (a provider's latency), as 100 tokens of text before the tool call
 * at the rate that takes that long; events keep coming, as from a real stream, so no stall watchdog fires. Unset:
 * the model answers at once and the fleet is bound by its CPU.
 */
const modelMs = Number(process.env.SCALE_MODEL_MS ?? 0);
const STREAMED_TOKENS = 100;
const preamble = modelMs > 0 ? [fauxText("t".repeat(STREAMED_TOKENS * 4))] : [];
const faux = registerFauxProvider({
  api: "bench-scale",
  provider: "bench",
  models: [{ id: "scale", contextWindow: 100_000_000, maxTokens: 1000 }],
  ...(modelMs > 0 ? { tokensPerSecond: (STREAMED_TOKENS * 1000) / modelMs } : {}),
});
const answer = (context: ModelContext) => {
  const done = context.messages.filter((m) => m.role === "toolResult").length;
  const info = Context.current().info;
  calls.push([info.workflowExecution?.workflowId ?? "?", done + 1, Date.now(), info.taskQueue === taskQueue ? 1 : 0]);
  if (done >= turns - 1) return fauxAssistantMessage([...preamble, fauxText(`read ${done} pages`)]);
  return fauxAssistantMessage([...preamble, fauxToolCall("fetch_page", { n: done + 1 }, { id: `c${done + 1}` })], {
    stopReason: "toolUse",
  });
};
// The faux queue is consumed per call: keep it topped up.
const refill = () => faux.setResponses(Array.from({ length: 10_000 }, () => answer));
refill();
setInterval(refill, 2000).unref();

const connection = await NativeConnection.connect({ address: env("TEMPORAL_ADDRESS") });
const worker = await createAgentWorker({
  connection,
  taskQueue,
  tools: [tool],
  models: [faux.getModel()],
  workflowBundle: { codePath: env("SCALE_BUNDLE") },
  ...(process.env.SCALE_CACHE_BYTES ? { contextCacheBytes: Number(process.env.SCALE_CACHE_BYTES) } : {}),
  routeModelCalls: process.env.SCALE_ROUTE !== "off",
  ...(process.env.SCALE_REPLAYS ? { maxConcurrentReplays: Number(process.env.SCALE_REPLAYS) } : {}),
  workerOptions: {
    // The bench names its workers so that it can tell, from a run's history, which one last ran its workflow task.
    identity: `scale-worker-${process.pid}`,
    maxConcurrentWorkflowTaskExecutions: Number(process.env.SCALE_WORKFLOW_TASKS ?? 40),
    ...(process.env.SCALE_WORKFLOW_THREADS
      ? { workflowThreadPoolSize: Number(process.env.SCALE_WORKFLOW_THREADS) }
      : {}),
    ...(process.env.SCALE_NONSTICKY_RATIO
      ? { nonStickyToStickyPollRatio: Number(process.env.SCALE_NONSTICKY_RATIO) }
      : {}),
    // "autoscaling": Temporal's poller autoscaling (the server's backlog hints), else a number of pollers.
    ...(process.env.SCALE_WORKFLOW_POLLS === "autoscaling"
      ? { workflowTaskPollerBehavior: { type: "autoscaling" as const } }
      : process.env.SCALE_WORKFLOW_POLLS
        ? { maxConcurrentWorkflowTaskPolls: Number(process.env.SCALE_WORKFLOW_POLLS) }
        : {}),
    ...(process.env.SCALE_ACTIVITY_POLLS === "autoscaling"
      ? { activityTaskPollerBehavior: { type: "autoscaling" as const } }
      : {}),
    maxConcurrentActivityTaskExecutions: 200,
    ...(process.env.SCALE_STICKY ? { stickyQueueScheduleToStartTimeout: process.env.SCALE_STICKY } : {}),
  },
});

process.on("message", (msg: { type: string }) => {
  if (msg.type === "stats") {
    const mem = process.memoryUsage();
    process.send!({ type: "stats", cache: worker.cacheStats(), rss: mem.rss, heapUsed: mem.heapUsed });
  } else if (msg.type === "calls") {
    process.send!({ type: "calls", calls });
  } else if (msg.type === "stop") {
    worker.shutdown();
  }
});
const running = worker.run();
process.send!({ type: "ready" });
await running;
process.exit(0);
