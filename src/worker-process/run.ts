/**
 * The worker as a process (`jai-agent worker`, `npm run worker`, the image's
 * entry point): connection from Temporal's environment configuration, what it
 * serves from the user's config module, limits from flags or environment,
 * health endpoints, and a graceful drain on SIGTERM/SIGINT (exit 0).
 */
import { existsSync } from "node:fs";
import type { Server } from "node:http";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from "@temporalio/worker";
import type { Api, Model } from "@jai/ai";
import { registerDemoModel } from "../demo/offline-model.js";
import { createFileTools } from "../tools/fs-tools.js";
import { Client } from "@temporalio/client";
import { startRunEventsService } from "../events/serve.js";
import { createAgentWorker, DEFAULT_TASK_QUEUE } from "../worker.js";
import { findConfigFile, loadServiceConfig, type AgentServiceConfig } from "./config.js";
import { temporalTarget } from "./connection.js";
import { serveHealth } from "./health.js";

export const WORKER_USAGE = `usage: jai-agent worker [options]

Connection: Temporal's environment configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS_CLIENT_CERT_PATH/KEY_PATH, TEMPORAL_PROFILE + temporal.toml).

  --address host:port           overrides TEMPORAL_ADDRESS / the profile
  --namespace name              overrides TEMPORAL_NAMESPACE / the profile
  --task-queue name             JAI_TASK_QUEUE, default "${DEFAULT_TASK_QUEUE}"
  --config file                 JAI_CONFIG, default ./jai.config.{js,mjs,ts} if present
  --workspace dir               JAI_WORKSPACE: root of the default file tools, default the working folder
  --max-activities n            JAI_MAX_CONCURRENT_ACTIVITIES (model calls + tools at once), default 100
  --max-workflow-tasks n        JAI_MAX_CONCURRENT_WORKFLOW_TASKS, default 40
  --health-port n               JAI_HEALTH_PORT: serve /healthz and /readyz (0 = any free port)
  --http-port n                 JAI_HTTP_PORT: serve the run API, live events (SSE) and run console (JAI_HTTP_HOST,
                                default 127.0.0.1; anywhere else needs JAI_HTTP_TOKEN); \`npm run serve\` uses 8787
  --shutdown-grace duration     JAI_SHUTDOWN_GRACE: how long in-flight activities may finish on SIGTERM, default 30s
  --workflow-bundle file        JAI_WORKFLOW_BUNDLE: prebuilt bundle (\`jai-agent bundle\`), default dist/workflow-bundle.js when present
  --no-demo-model               JAI_DEMO_MODEL=off: do not serve demo/offline-scripted
`;

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** The prebuilt workflow bundle shipped next to the built code (the image builds it), if any. */
function shippedBundle(): string | undefined {
  const file = fileURLToPath(new URL("../workflow-bundle.js", import.meta.url));
  return existsSync(file) ? file : undefined;
}

export interface WorkerProcessOptions {
  argv?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  log?: (line: string) => void;
}

/** Runs the worker until a signal drains it; resolves with the exit code. */
export async function runWorkerProcess(options: WorkerProcessOptions = {}): Promise<number> {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const log = options.log ?? ((line: string) => console.log(line));
  const { values } = parseArgs({
    args: options.argv ?? [],
    options: {
      address: { type: "string" },
      namespace: { type: "string" },
      "task-queue": { type: "string" },
      config: { type: "string" },
      workspace: { type: "string" },
      "max-activities": { type: "string" },
      "max-workflow-tasks": { type: "string" },
      "health-port": { type: "string" },
      "http-port": { type: "string" },
      "shutdown-grace": { type: "string" },
      "workflow-bundle": { type: "string" },
      "no-demo-model": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    log(WORKER_USAGE);
    return 0;
  }

  const target = temporalTarget(env, { address: values.address, namespace: values.namespace });
  const taskQueue = values["task-queue"] ?? env.JAI_TASK_QUEUE ?? DEFAULT_TASK_QUEUE;
  const configFile = findConfigFile(values.config ?? env.JAI_CONFIG, cwd);
  const config: AgentServiceConfig = configFile ? await loadServiceConfig(configFile) : {};
  const workspace = values.workspace ?? env.JAI_WORKSPACE ?? cwd;
  const tools = config.tools ?? createFileTools(workspace);
  const demo = config.demoModel !== false && !values["no-demo-model"] && env.JAI_DEMO_MODEL !== "off";
  const models: Model<Api>[] = [...(config.models ?? []), ...(demo ? [registerDemoModel()] : [])];
  const maxActivities = positiveInt(values["max-activities"] ?? env.JAI_MAX_CONCURRENT_ACTIVITIES, "--max-activities") ?? 100;
  const maxWorkflowTasks = positiveInt(values["max-workflow-tasks"] ?? env.JAI_MAX_CONCURRENT_WORKFLOW_TASKS, "--max-workflow-tasks") ?? 40;
  const healthPort = positiveInt(values["health-port"] ?? env.JAI_HEALTH_PORT, "--health-port");
  const httpPort = positiveInt(values["http-port"] ?? env.JAI_HTTP_PORT, "--http-port");
  const shutdownGrace = values["shutdown-grace"] ?? env.JAI_SHUTDOWN_GRACE ?? "30s";
  const bundleFile = values["workflow-bundle"] ?? env.JAI_WORKFLOW_BUNDLE ?? shippedBundle();
  if (bundleFile && !existsSync(bundleFile)) throw new Error(`Workflow bundle not found: ${bundleFile}`);

  try {
    Runtime.install({ logger: new DefaultLogger((env.JAI_LOG_LEVEL ?? "WARN") as LogLevel) });
  } catch {
    // Already installed by the embedding process.
  }
  const connection = await NativeConnection.connect(target.connectionOptions);
  const events =
    httpPort === undefined
      ? undefined
      : await startRunEventsService({
          client: new Client({ connection, namespace: target.namespace }),
          host: env.JAI_HTTP_HOST,
          port: httpPort,
          token: env.JAI_HTTP_TOKEN,
          taskQueue,
          temporalUiUrl: env.JAI_TEMPORAL_UI,
          namespace: target.namespace,
          onEvent: config.onEvent,
        });
  const agent = await createAgentWorker({
    connection,
    namespace: target.namespace,
    taskQueue,
    tools,
    models,
    getApiKey: config.getApiKey,
    onEvent: events?.onEvent ?? config.onEvent,
    compactContext: config.compactContext,
    contextCacheSize: config.contextCacheSize,
    mcpServers: config.mcpServers,
    webhooks: config.webhooks,
    ...(bundleFile ? { workflowBundle: { codePath: bundleFile } } : {}),
    workerOptions: {
      maxConcurrentActivityTaskExecutions: maxActivities,
      maxConcurrentWorkflowTaskExecutions: maxWorkflowTasks,
      // On SIGTERM in-flight model calls and tools get this long to finish; then they are cancelled
      // and their heartbeat timeouts hand them to another worker.
      shutdownGraceTime: shutdownGrace,
      // Announces the run server in history, where handle.events() finds it.
      ...(events ? { identity: events.identity } : {}),
      ...config.workerOptions,
    },
  });
  let health: Server | undefined;
  if (healthPort !== undefined) {
    health = await serveHealth(
      {
        healthy: () => agent.worker.getState() !== "FAILED",
        ready: () => agent.worker.getState() === "RUNNING",
        detail: () => ({ state: agent.worker.getState(), taskQueue, namespace: target.namespace }),
      },
      healthPort,
      env.JAI_HEALTH_HOST,
    );
  }
  const where = `${health ? `; health on :${(health.address() as { port: number }).port}` : ""}${events ? `; runs API and console on ${events.server.url}` : ""}`;
  const served = [...models.map((m) => `${m.provider}/${m.id}`), "any provider with its API key"].join(", ");
  log(`jai-agent worker: ${target.describe}, task queue "${taskQueue}"${configFile ? `, config ${configFile}` : ""}${where}`);
  log(`  tools: ${tools.map((t) => t.name).join(", ") || "(none)"}; models: ${served}`);
  const running = agent.run();
  log("ready");
  try {
    await running;
    log("jai-agent worker: drained, exiting");
    return 0;
  } catch (err) {
    log(`jai-agent worker failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  } finally {
    health?.close();
    await events?.server.close();
    // run() closes only connections it opened itself.
    await connection.close().catch(() => {});
  }
}
