/**
 * The peer's worker process for `npm run bench -- --peers`: runs from its own
 * folder (its own @temporalio/* 1.23.0), serves one task queue with the AI SDK
 * plugin and a scripted model, and answers JSON commands on stdin, one per
 * line, so the bench can interleave its runs with ours on the same server.
 */
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";
import { Context } from "@temporalio/activity";
import { Client, Connection } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime, Worker } from "@temporalio/worker";
import { AiSdkPlugin } from "@temporalio/ai-sdk";
import { MockLanguageModelV4 } from "ai/test";

const [address, taskQueue] = process.argv.slice(2);
/** Provider requests per workflow id (ms timestamps): first request and turn latencies. */
const requests = new Map<string, number[]>();

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const model = new MockLanguageModelV4({
  modelId: "scripted",
  doGenerate: async (options) => {
    const workflowId = Context.current().info.workflowExecution.workflowId;
    const seen = requests.get(workflowId) ?? [];
    seen.push(Date.now());
    requests.set(workflowId, seen);
    const done = options.prompt
      .filter((m) => m.role === "tool")
      .flatMap((m) => m.content)
      .filter((p) => p.type === "tool-result").length;
    const turns = Number(/turns=(\d+)/.exec(JSON.stringify(options.prompt[0]))?.[1]);
    if (done >= turns)
      return {
        content: [{ type: "text", text: `read ${done} pages` }],
        finishReason: { unified: "stop", raw: "stop" },
        usage,
        warnings: [],
      };
    return {
      content: [
        {
          type: "tool-call",
          toolCallId: `c${done + 1}`,
          toolName: "fetch_page",
          input: JSON.stringify({ n: done + 1 }),
        },
      ],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage,
      warnings: [],
    };
  },
});
const provider = {
  specificationVersion: "v4" as const,
  languageModel: () => model,
  embeddingModel: () => {
    throw new Error("no embedding model");
  },
  imageModel: () => {
    throw new Error("no image model");
  },
};

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger("ERROR") });
  const connection = await NativeConnection.connect({ address });
  const client = new Client({
    connection: await Connection.connect({
      address,
      channelArgs: { "grpc.max_receive_message_length": 256 * 1024 * 1024 },
    }),
  });
  const worker = await Worker.create({
    connection,
    taskQueue,
    workflowsPath: path.join(path.dirname(fileURLToPath(import.meta.url)), "workflows.ts"),
    plugins: [new AiSdkPlugin({ modelProvider: provider as never })],
    activities: { fetchPage: async ({ n, bytes }: { n: number; bytes: number }) => `page ${n}: ${"p".repeat(bytes)}` },
    maxHeartbeatThrottleInterval: "1s",
  });
  const running = worker.run();
  const say = (o: unknown) => process.stdout.write(`${JSON.stringify(o)}\n`);
  say({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    const cmd = JSON.parse(line) as {
      op: "run" | "many" | "stop";
      id: string;
      turns: number;
      bytes: number;
      runs?: number;
    };
    if (cmd.op === "stop") break;
    const start = async (workflowId: string) => {
      const t = Date.now();
      const handle = await client.workflow.start("peerAgentRun", {
        taskQueue,
        workflowId,
        args: [{ prompt: `go turns=${cmd.turns}`, maxSteps: cmd.turns + 1, bytes: cmd.bytes }],
      });
      const steps = await handle.result();
      const seen = requests.get(workflowId) ?? [];
      requests.delete(workflowId);
      return { workflowId, runId: handle.firstExecutionRunId, startedAt: t, ms: Date.now() - t, steps, requests: seen };
    };
    try {
      if (cmd.op === "run") say(await start(cmd.id));
      else {
        const t = Date.now();
        const settled = await Promise.allSettled(Array.from({ length: cmd.runs! }, (_, i) => start(`${cmd.id}-${i}`)));
        say({
          ms: Date.now() - t,
          runs: settled.map((s) => (s.status === "fulfilled" ? s.value : { error: String(s.reason) })),
        });
      }
    } catch (err) {
      say({ error: String(err) });
    }
  }
  worker.shutdown();
  await running;
  await connection.close();
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${err?.stack ?? err}\n`);
  process.exit(1);
});
