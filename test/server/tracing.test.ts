/**
 * One trace per run: the caller's invoke_agent span → Temporal's StartWorkflow
 * → RunWorkflow → each activity → GenAI spans (`chat {model}`, `execute_tool
 * {name}`) → the provider's HTTP request. A two-turn run against the local
 * provider server (real OpenAI wire format), spans in an in-memory exporter.
 */
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { Client } from "@temporalio/client";
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { createAgentTracing, type AgentTracing } from "../../src/worker/telemetry/tracing.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { openTestEnv, testWorker, uniqueId, type TestEnv } from "../support/helpers.js";
import { ProviderServer } from "../support/provider-server.js";
import { sharedBundle } from "../support/bundles.js";

let env: TestEnv;
let server: ProviderServer;
let tracing: AgentTracing;
const exporter = new InMemorySpanExporter();
beforeAll(async () => {
  env = await openTestEnv();
  server = await new ProviderServer().start();
  tracing = createAgentTracing({ spanProcessor: new SimpleSpanProcessor(exporter), serviceName: "jai-agent-test" });
});
afterAll(async () => {
  await tracing?.shutdown();
  await server?.stop();
  await env?.close();
});

const lookup: AgentTool = {
  name: "lookup",
  description: "Looks a word up",
  parameters: Type.Object({ word: Type.String() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `${args.word}: a small rodent` }] };
  },
};

interface Node {
  name: string;
  attributes: ReadableSpan["attributes"];
  children: Node[];
}

/** The span tree under `root`, children in start order. */
function tree(spans: ReadableSpan[], root: ReadableSpan): Node {
  const children = spans
    .filter((s) => s.parentSpanId === root.spanContext().spanId)
    .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
  return { name: root.name, attributes: root.attributes, children: children.map((c) => tree(spans, c)) };
}

/** Names only, for the shape; the workflow's own spans (queries, updates, handlers) are left out. */
const shape = (node: Node): unknown =>
  node.children.length === 0 ? node.name : { [node.name]: node.children.map(shape) };

it("traces a two-turn run from startAgentRun to the provider's HTTP request, with GenAI attributes", async () => {
  const bundle = await sharedBundle("tracing");
  server.script([
    { toolCalls: [{ id: "c1", name: "lookup", args: { word: "vole" } }], usage: { input: 11, output: 7 } },
    { text: "A vole is a small rodent.", usage: { input: 23, output: 9 } },
  ]);
  const model = server.openAIModel();
  const { worker, taskQueue } = await testWorker(env, [lookup], {
    workflowBundle: bundle,
    tracing,
    models: [model],
    getApiKey: () => "sk-test",
  });
  const client = new Client({
    connection: env.client.connection,
    interceptors: { workflow: tracing.clientInterceptors },
  });
  const handle = await startAgentRun(client, {
    taskQueue,
    workflowId: uniqueId("traced"),
    model,
    prompt: "What is a vole?",
  });
  const result = await worker.runUntil(handle.result());
  expect(result.stopReason).toBe("stop");
  expect(result.turns).toBe(2);

  const spans = exporter.getFinishedSpans();
  const roots = spans.filter((s) => s.name === "invoke_agent jai-agent");
  expect(roots).toHaveLength(1);
  const traceId = roots[0].spanContext().traceId;
  const mine = spans.filter((s) => s.spanContext().traceId === traceId);
  const root = tree(mine, roots[0]);
  const runWorkflow = root.children[0].children.find((c) => c.name === "RunWorkflow:agentRun")!;
  const activities = runWorkflow.children.filter((c) => c.name.startsWith("StartActivity:"));
  expect(root.children.map((c) => c.name)).toEqual(["StartWorkflow:agentRun"]);
  expect(activities.map(shape)).toEqual([
    { "StartActivity:resolveRunSetup": ["RunActivity:resolveRunSetup"] },
    {
      "StartActivity:streamAssistantMessage": [
        { "RunActivity:streamAssistantMessage": [{ [`chat ${model.id}`]: ["POST"] }] },
      ],
    },
    { "StartActivity:executeTool": [{ "RunActivity:executeTool": ["execute_tool lookup"] }] },
    {
      "StartActivity:streamAssistantMessage": [
        { "RunActivity:streamAssistantMessage": [{ [`chat ${model.id}`]: ["POST"] }] },
      ],
    },
  ]);

  const byName = (name: string) => mine.filter((s) => s.name === name);
  const chats = byName(`chat ${model.id}`);
  expect(chats.map((s) => s.attributes)).toEqual([
    expect.objectContaining({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": model.id,
      "gen_ai.provider.name": model.provider,
      "gen_ai.usage.input_tokens": 11,
      "gen_ai.usage.output_tokens": 7,
      "gen_ai.response.finish_reasons": ["toolUse"],
    }),
    expect.objectContaining({
      "gen_ai.operation.name": "chat",
      "gen_ai.usage.input_tokens": 23,
      "gen_ai.usage.output_tokens": 9,
      "gen_ai.response.finish_reasons": ["stop"],
    }),
  ]);
  expect(byName("execute_tool lookup")[0].attributes).toMatchObject({
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "lookup",
    "gen_ai.tool.call.id": "c1",
  });
  const http = byName("POST");
  expect(http).toHaveLength(2);
  expect(http[0].attributes).toMatchObject({
    "http.request.method": "POST",
    "server.address": "127.0.0.1",
    "http.response.status_code": 200,
  });
  expect(String(http[0].attributes["url.full"])).toMatch(/\/v1\/chat\/completions$/);
  expect(roots[0].attributes).toMatchObject({
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.conversation.id": handle.workflowId,
  });
}, 120000);
