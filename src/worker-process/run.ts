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
import os from "node:os";
import { Client } from "@temporalio/client";
import type { Duration } from "@temporalio/common";
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from "@temporalio/worker";
import type { Api, Model } from "@jai/ai";
import { registerDemoModel } from "../demo/offline-model.js";
import { createFileTools } from "../tools/fs-tools.js";
import { startRunEventsService } from "../events/serve.js";
import { createAgentWorker, DEFAULT_TASK_QUEUE } from "../worker.js";
import { presenceTimeoutMs } from "../failover/presence.js";
import type { LinkOptions } from "../failover/links.js";
import { replayCapFits } from "../failover/replay-slots.js";
import { dataConverterFromEnv } from "../codec/config.js";
import { findConfigFile, loadServiceConfig, type AgentServiceConfig } from "./config.js";
import { temporalTarget } from "./connection.js";
import { serveHealth } from "./health.js";
import { freePort } from "../dev-server.js";
import { createAgentMetrics, type AgentMetrics } from "../telemetry/metrics.js";
import { tracingFromEnv } from "../telemetry/tracing.js";

/** The agent's metrics and, when this process installed the runtime, the SDK's (fetched from the core's loopback exporter). */
async function scrape(metrics: AgentMetrics, core: string | undefined): Promise<string> {
  const own = await metrics.registry.metrics();
  if (!core) return own;
  const response = await fetch(`http://${core}/metrics`).catch(() => undefined);
  const runtime = response?.ok ? await response.text() : "# Temporal runtime metrics unavailable\n";
  return `${runtime.trimEnd()}\n${own}`;
}

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
  --max-replays n               JAI_MAX_CONCURRENT_REPLAYS: of them, tasks from the shared queue (replays) at once,
                                default 10 with --fast-failover, else no cap
  --context-cache-mb n          JAI_CONTEXT_CACHE_MB: byte budget of the model-context cache, default 256
  --health-port n               JAI_HEALTH_PORT: serve /healthz and /readyz (0 = any free port)
  --http-port n                 JAI_HTTP_PORT: serve the run API, live events (SSE) and run console (JAI_HTTP_HOST,
                                default 127.0.0.1; anywhere else needs JAI_HTTP_TOKEN); \`npm run serve\` uses 8787
  --shutdown-grace duration     JAI_SHUTDOWN_GRACE: how long in-flight activities may finish on SIGTERM, default 30s
  --workflow-bundle file        JAI_WORKFLOW_BUNDLE: prebuilt bundle (\`jai-agent bundle\`), default dist/workflow-bundle.js when present
  --no-route-model-calls        JAI_ROUTE_MODEL_CALLS=off: model calls on the shared queue (servers with eager
                                activity execution: README "Eager dispatch")
  --fast-failover               JAI_FAST_FAILOVER=on (or a presence timeout, e.g. 2s; default 1s): a killed worker's
                                runs go on within ~2 presence timeouts, not their heartbeat timeout (README "Scaling
                                and sizing"); every worker of the queue must run this version
  --failover-links value        JAI_FAILOVER_LINKS: with --fast-failover, where this worker listens for its peers'
                                links, [host:]port (default 0.0.0.0:0, any free port), or "off"; peers connect to
                                JAI_FAILOVER_ADVERTISE (default: host, or this machine's first non-internal IPv4)
  --no-demo-model               JAI_DEMO_MODEL=off: do not serve demo/offline-scripted
  --no-metrics                  JAI_METRICS=off: no /metrics on the health port (Temporal's runtime metrics + the agent's)

Traces: OTLP over HTTP when OTEL_TRACES_EXPORTER=otlp or OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (standard OTEL_* variables).

Encryption (README "Encryption"): JAI_CODEC_KEYS="id:base64key,..." or JAI_CODEC_KEY_FILE=file, the first
key current, older ones still decrypt; JAI_CODEC_COMPRESS=1 deflates before encrypting.
JAI_CODEC_MISSING_KEY=terminate ends a run whose payloads this worker cannot decrypt (default "retry":
Temporal retries its workflow task until a worker with the key serves it; the log names run and key).
`;

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** `fastFailover` from the flag or JAI_FAST_FAILOVER ("on", "off" or a presence timeout), else the config file's. */
function fastFailover(
  value: string | undefined,
  configured: AgentServiceConfig["fastFailover"],
): { fastFailover?: AgentServiceConfig["fastFailover"] } {
  if (value === undefined || value === "") return configured === undefined ? {} : { fastFailover: configured };
  if (value === "off") return {};
  if (value === "on") return { fastFailover: true };
  try {
    presenceTimeoutMs(value as Duration);
  } catch {
    throw new Error(`JAI_FAST_FAILOVER must be "on", "off" or a duration above 0 such as "2s", got "${value}"`);
  }
  return { fastFailover: { presenceTimeout: value as Duration } };
}

/** Fast failover's links from JAI_FAILOVER_LINKS ("off", "port" or "host:port") and JAI_FAILOVER_ADVERTISE. */
export function failoverLinks(
  value: string | undefined,
  advertise: string | undefined,
): false | LinkOptions | undefined {
  if ((value === undefined || value === "") && !advertise) return undefined;
  if (value === "off") return false;
  const at = value?.lastIndexOf(":") ?? -1;
  // "[::1]:7000" names an IPv6 host.
  const host = value && at >= 0 ? value.slice(0, at).replace(/^\[(.*)\]$/, "$1") : undefined;
  const port = value ? Number(at >= 0 ? value.slice(at + 1) : value) : 0;
  if (host === "" || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`JAI_FAILOVER_LINKS must be "off", a port or host:port, got "${value}"`);
  return { ...(host ? { host } : {}), port, ...(advertise ? { advertise } : {}) };
}

function withLinks(
  failover: { fastFailover?: AgentServiceConfig["fastFailover"] },
  links: false | LinkOptions | undefined,
): { fastFailover?: AgentServiceConfig["fastFailover"] } {
  if (!failover.fastFailover || links === undefined) return failover;
  return { fastFailover: { ...(failover.fastFailover === true ? {} : failover.fastFailover), links } };
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
      "max-replays": { type: "string" },
      "health-port": { type: "string" },
      "http-port": { type: "string" },
      "context-cache-mb": { type: "string" },
      "shutdown-grace": { type: "string" },
      "workflow-bundle": { type: "string" },
      "no-demo-model": { type: "boolean" },
      "no-route-model-calls": { type: "boolean" },
      "fast-failover": { type: "boolean" },
      "failover-links": { type: "string" },
      "no-metrics": { type: "boolean" },
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
  const maxActivities =
    positiveInt(values["max-activities"] ?? env.JAI_MAX_CONCURRENT_ACTIVITIES, "--max-activities") ?? 100;
  const maxWorkflowTasks =
    positiveInt(values["max-workflow-tasks"] ?? env.JAI_MAX_CONCURRENT_WORKFLOW_TASKS, "--max-workflow-tasks") ?? 40;
  const maxReplays = positiveInt(values["max-replays"] ?? env.JAI_MAX_CONCURRENT_REPLAYS, "--max-replays");
  if (maxReplays !== undefined && !replayCapFits(maxReplays, maxWorkflowTasks))
    throw new Error(
      `--max-replays (JAI_MAX_CONCURRENT_REPLAYS) must be from 1 to --max-workflow-tasks - 1 (${maxWorkflowTasks - 1}), got ${maxReplays}`,
    );
  const cacheMb = positiveInt(values["context-cache-mb"] ?? env.JAI_CONTEXT_CACHE_MB, "--context-cache-mb");
  const healthPort = positiveInt(values["health-port"] ?? env.JAI_HEALTH_PORT, "--health-port");
  const httpPort = positiveInt(values["http-port"] ?? env.JAI_HTTP_PORT, "--http-port");
  const shutdownGrace = values["shutdown-grace"] ?? env.JAI_SHUTDOWN_GRACE ?? "30s";
  const bundleFile = values["workflow-bundle"] ?? env.JAI_WORKFLOW_BUNDLE ?? shippedBundle();
  if (bundleFile && !existsSync(bundleFile)) throw new Error(`Workflow bundle not found: ${bundleFile}`);

  // A payload this worker cannot decrypt fails its task; in a workflow task Temporal retries that until a
  // worker with the key takes it, so say which run and which key, once per pair, where operators look.
  // JAI_CODEC_MISSING_KEY=terminate ends such a run instead (its status and reason name the key).
  const missingKey = env.JAI_CODEC_MISSING_KEY ?? "retry";
  if (missingKey !== "retry" && missingKey !== "terminate")
    throw new Error(`JAI_CODEC_MISSING_KEY must be "retry" or "terminate", got "${missingKey}"`);
  const keyErrors = new Set<string>();
  const terminator: { client?: Client } = {}; // set once connected
  const dataConverter =
    config.dataConverter ??
    config.workerOptions?.dataConverter ??
    dataConverterFromEnv(env, {
      onKeyError: (err, context) => {
        const run = (context && "workflowId" in context ? context.workflowId : undefined) ?? "?";
        if (keyErrors.has(`${run}\n${err.keyId}`)) return;
        keyErrors.add(`${run}\n${err.keyId}`);
        const terminate =
          missingKey === "terminate" && context?.type === "workflow" && run !== "?" && terminator.client !== undefined;
        log(
          `jai-agent worker: CANNOT DECRYPT run ${run}: ${err.message}. ` +
            (terminate
              ? "Terminating the run (JAI_CODEC_MISSING_KEY=terminate)."
              : `Its tasks fail (and are retried) until a worker with key "${err.keyId}" serves it.`),
        );
        if (terminate) {
          const reason = `codec key "${err.keyId}" ${err.reason === "missing-key" ? "missing" : "does not decrypt"} on worker ${os.hostname()}/${process.pid}: ${err.message}`;
          terminator
            .client!.workflow.getHandle(run)
            .terminate(reason)
            .catch((e: unknown) =>
              log(`jai-agent worker: could not terminate run ${run}: ${e instanceof Error ? e.message : String(e)}`),
            );
        }
      },
    });
  // /metrics lives on the health port: the SDK's runtime metrics (served by the core on a loopback port) and the agent's.
  const withMetrics = healthPort !== undefined && !values["no-metrics"] && env.JAI_METRICS !== "off";
  const coreMetrics = withMetrics ? `127.0.0.1:${await freePort()}` : undefined;
  let runtimeMetrics = false;
  try {
    Runtime.install({
      logger: new DefaultLogger((env.JAI_LOG_LEVEL ?? "WARN") as LogLevel),
      ...(coreMetrics
        ? {
            telemetryOptions: {
              metrics: {
                prometheus: { bindAddress: coreMetrics, countersTotalSuffix: true, useSecondsForDurations: true },
              },
            },
          }
        : {}),
    });
    runtimeMetrics = coreMetrics !== undefined;
  } catch {
    // Already installed by the embedding process (its own telemetry options apply).
  }
  const metrics = withMetrics ? createAgentMetrics() : undefined;
  // Traces when the standard OTEL_* environment asks for them (OTLP over HTTP); the shipped bundle has no tracing
  // interceptors, so the workflows are bundled here then.
  const tracing = await tracingFromEnv(env);
  const connection = await NativeConnection.connect(target.connectionOptions);
  const events =
    httpPort === undefined
      ? undefined
      : await startRunEventsService({
          client: new Client({ connection, namespace: target.namespace, dataConverter }),
          host: env.JAI_HTTP_HOST,
          port: httpPort,
          token: env.JAI_HTTP_TOKEN,
          taskQueue,
          temporalUiUrl: env.JAI_TEMPORAL_UI,
          namespace: target.namespace,
          onEvent: config.onEvent,
        });
  // Terminating needs no payloads, so no codec: it works on the runs this worker cannot read.
  terminator.client = new Client({ connection, namespace: target.namespace });
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
    metrics,
    tracing,
    dataConverter,
    contextCacheBytes: cacheMb !== undefined ? cacheMb * 1024 * 1024 : config.contextCacheBytes,
    mcpServers: config.mcpServers,
    routeModelCalls:
      !values["no-route-model-calls"] && env.JAI_ROUTE_MODEL_CALLS !== "off" && config.routeModelCalls !== false,
    webhooks: config.webhooks,
    ...withLinks(
      fastFailover(values["fast-failover"] ? "on" : env.JAI_FAST_FAILOVER, config.fastFailover),
      failoverLinks(values["failover-links"] ?? env.JAI_FAILOVER_LINKS, env.JAI_FAILOVER_ADVERTISE),
    ),
    ...(maxReplays !== undefined || config.maxConcurrentReplays !== undefined
      ? { maxConcurrentReplays: maxReplays ?? config.maxConcurrentReplays }
      : {}),
    ...(bundleFile && !tracing ? { workflowBundle: { codePath: bundleFile } } : {}),
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
        detail: () => ({
          state: agent.worker.getState(),
          taskQueue,
          namespace: target.namespace,
          ...(keyErrors.size ? { undecryptableKeyIds: [...new Set([...keyErrors].map((k) => k.split("\n")[1]))] } : {}),
        }),
        ...(metrics ? { metrics: () => scrape(metrics, runtimeMetrics ? coreMetrics : undefined) } : {}),
      },
      healthPort,
      env.JAI_HEALTH_HOST,
    );
  }
  const where = `${health ? `; health on :${(health.address() as { port: number }).port}` : ""}${events ? `; runs API and console on ${events.server.url}` : ""}`;
  const served = [...models.map((m) => `${m.provider}/${m.id}`), "any provider with its API key"].join(", ");
  const codec = dataConverter?.payloadCodecs?.length ? ", payload codec on" : "";
  log(
    `jai-agent worker: ${target.describe}, task queue "${taskQueue}"${configFile ? `, config ${configFile}` : ""}${codec}${where}`,
  );
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
    await tracing?.shutdown().catch(() => {});
    // run() closes only connections it opened itself.
    await connection.close().catch(() => {});
  }
}
