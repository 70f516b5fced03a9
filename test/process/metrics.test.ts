/**
 * The worker process's /metrics: Temporal's runtime metrics and the agent's,
 * scraped after a run and checked against the run's own result.
 */
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { startAgentRun } from "../../src/client/client.js";
import { openTestEnv, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { repoRoot, withSharedBundle } from "../support/service/processes.js";
import { nodeEntry } from "../support/entry.js";

let env: TestEnv;
let child: ChildProcess | undefined;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await env?.close();
});

/** Samples of one metric as { labels-string: value }. */
function samples(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (m && m[1] === name) out.set(m[2] ?? "", Number(m[3]));
  }
  return out;
}
const sum = (values: Map<string, number>) => [...values.values()].reduce((a, b) => a + b, 0);
const one = (text: string, name: string, labels: string) => samples(text, name).get(labels);

it("serves Temporal's runtime metrics and the agent's on /metrics, matching the run", async () => {
  const taskQueue = uniqueId("metrics");
  child = spawn(
    process.execPath,
    [...nodeEntry(path.join(repoRoot, "src/cli/worker-main.ts")), "--task-queue", taskQueue, "--health-port", "0"],
    {
      cwd: repoRoot,
      env: {
        ...process.env,
        NODE_OPTIONS: "",
        ...(await withSharedBundle({ TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS })),
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  await within(
    new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/^ready$/m.test(output)) resolve();
      };
      child!.stdout!.on("data", onData);
      child!.stderr!.on("data", onData);
      child!.once("exit", (code) => reject(new Error(`worker exited ${code}: ${output}`)));
    }),
    60000,
    "the worker process to be ready",
  );
  const port = Number(/health on :(\d+)/.exec(output)![1]);
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("scraped"),
    model: "demo/offline-scripted",
    prompt: "What is this project?",
  });
  const result = await within(handle.result(), 60000, "the demo run");
  expect(result.stopReason).toBe("stop");
  const toolCalls = result.messages.filter((m) => m.role === "toolResult").length;
  expect(toolCalls).toBeGreaterThan(0);

  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain/);
  const text = await response.text();
  const model = `model="demo/offline-scripted"`;

  expect(one(text, "jai_agent_runs_started_total", `{${model}}`)).toBe(1);
  expect(one(text, "jai_agent_runs_ended_total", `{${model},stop_reason="stop"}`)).toBe(1);
  expect(one(text, "jai_agent_turns_total", `{${model}}`)).toBe(result.turns);
  expect(one(text, "jai_agent_tokens_total", `{${model},kind="input"}`)).toBe(result.usage.input);
  expect(one(text, "jai_agent_tokens_total", `{${model},kind="output"}`)).toBe(result.usage.output);
  expect(one(text, "jai_agent_cost_usd_total", `{${model}}`)).toBeCloseTo(result.usage.cost.total, 9);
  expect(one(text, "jai_agent_model_call_seconds_count", `{${model},outcome="stop"}`)).toBe(1);
  expect(one(text, "jai_agent_model_call_seconds_count", `{${model},outcome="toolUse"}`)).toBe(result.turns - 1);
  expect(one(text, "jai_agent_model_time_to_first_token_seconds_count", `{${model}}`)).toBe(result.turns);
  expect(sum(samples(text, "jai_agent_tool_call_seconds_count"))).toBe(toolCalls);
  expect(sum(samples(text, "jai_agent_tool_errors_total"))).toBe(0);
  expect(one(text, "jai_agent_approvals_waiting", "")).toBe(0);
  // Every model call after the first reused this worker's cached context.
  expect(one(text, "jai_agent_context_cache_total", `{result="hit"}`)).toBe(result.turns - 1);
  expect(one(text, "jai_agent_context_cache_total", `{result="miss"}`) ?? 0).toBe(0);
  // Temporal's own runtime metrics, from the SDK core.
  expect(sum(samples(text, "temporal_workflow_completed_total"))).toBeGreaterThanOrEqual(1);
  expect(text).toMatch(/^temporal_activity_execution_latency_bucket\{/m);
  // Used by the Grafana dashboard (deploy/grafana/dashboards/jai-agent.json).
  expect(text).toMatch(/^temporal_worker_task_slots_used\{[^}]*worker_type="ActivityWorker"/m);
  expect(text).toMatch(/^temporal_workflow_task_schedule_to_start_latency_bucket\{/m);

  child.kill("SIGTERM");
  await new Promise((resolve) => child!.once("exit", resolve));
}, 120000);
