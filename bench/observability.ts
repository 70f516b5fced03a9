/**
 * Per-turn cost of observability: the same loop on two workers, one plain, one
 * with Prometheus metrics and OpenTelemetry tracing (Temporal's interceptors in
 * the bundle, GenAI spans, a batch processor whose exporter drops the spans, as
 * an OTLP exporter would send them off-thread). Runs interleaved, medians compared.
 */
import { BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import { Client } from "@temporalio/client";
import { startAgentRun } from "../src/client/client.js";
import { createAgentMetrics } from "../src/worker/telemetry/metrics.js";
import { createAgentTracing } from "../src/worker/telemetry/tracing.js";
import { bundleAgentWorkflows, createAgentWorker } from "../src/worker/worker.js";
import { median, pageScript, table, type Bench } from "./common.js";

const TURNS = 20;
const RUNS = Number(process.env.JAI_BENCH_RUNS ?? 11);

/** JAI_BENCH_OBS=metrics or =tracing measures one of the two alone; JAI_BENCH_RUNS sets the runs per worker. */
const only = process.env.JAI_BENCH_OBS;

const dropping: SpanExporter = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} };

export async function observability(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const script = pageScript("observability", TURNS, 100, { runs: (RUNS + 1) * 2 });
  const tracing = createAgentTracing({ spanProcessor: new BatchSpanProcessor(dropping), serviceName: "bench" });
  const plain = await createAgentWorker({
    connection: bench.connection,
    taskQueue: "bench-obs-off",
    tools: [script.tool],
    models: [script.model],
  });
  const observed = await createAgentWorker({
    connection: bench.connection,
    taskQueue: "bench-obs-on",
    tools: [script.tool],
    models: [script.model],
    ...(only !== "metrics"
      ? { workflowBundle: await bundleAgentWorkflows(undefined, { tracing: true }), tracing }
      : {}),
    ...(only !== "tracing" ? { metrics: createAgentMetrics() } : {}),
  });
  const tracedClient = new Client({
    connection: bench.client.connection,
    interceptors: { workflow: tracing.clientInterceptors },
  });
  const offMs: number[] = [];
  const onMs: number[] = [];
  const run = async (client: Client, taskQueue: string, i: number) => {
    const t = performance.now();
    const handle = await startAgentRun(client, {
      taskQueue,
      workflowId: `${taskQueue}-${i}-${Date.now()}`,
      model: script.model,
      prompt: "go",
      maxTurns: TURNS + 1,
    });
    await handle.result();
    return (performance.now() - t) / (TURNS + 1);
  };
  const plainRunning = plain.run();
  try {
    await observed.runUntil(async () => {
      for (let i = 0; i < RUNS + 1; i++) {
        // Interleaved, order alternating, first round discarded as warm-up.
        let off: number;
        let on: number;
        if (i % 2 === 0) {
          off = await run(bench.client, "bench-obs-off", i);
          on = await run(tracedClient, "bench-obs-on", i);
        } else {
          on = await run(tracedClient, "bench-obs-on", i);
          off = await run(bench.client, "bench-obs-off", i);
        }
        if (i > 0) {
          offMs.push(off);
          onMs.push(on);
        }
      }
    });
  } finally {
    plain.shutdown();
    await plainRunning;
    await tracing.shutdown();
  }
  const off = median(offMs);
  const on = median(onMs);
  const ratio = on / off;
  const markdown = [
    `### Observability overhead (${TURNS} tool turns + the answer; median of ${RUNS} runs each, interleaved)`,
    "",
    table(
      ["worker", "ms per turn", "vs plain"],
      [
        ["plain (search attributes only)", off.toFixed(1), "1.00×"],
        ["Prometheus metrics + OpenTelemetry tracing", on.toFixed(1), `${ratio.toFixed(3)}×`],
      ],
    ),
  ].join("\n");
  return {
    markdown,
    goals: [
      `per-turn overhead with tracing + metrics: ${ratio.toFixed(3)}× (goal ≤ 1.05×): ${ratio <= 1.05 ? "met" : "NOT met"}`,
    ],
  };
}
