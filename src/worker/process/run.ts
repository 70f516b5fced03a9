/**
 * The worker as a process (`jai-agent worker`, `npm run worker`, the image's
 * entry point): connection from Temporal's environment configuration, what it
 * serves from the user's config module, limits from flags or environment (one
 * table, `SETTINGS`, which --help prints), health endpoints, and a graceful
 * drain on SIGTERM/SIGINT (exit 0).
 */
import { existsSync } from "node:fs";
import type { Server } from "node:http";
import { parseArgs } from "node:util";
import os from "node:os";
import { Client } from "@temporalio/client";
import type { DataConverter } from "@temporalio/common";
import { NativeConnection, Runtime } from "@temporalio/worker";
import type { Api, Model } from "@jai/ai";
import { registerDemoModel } from "../../demo/offline-model.js";
import { createFileTools } from "../tools/fs-tools.js";
import {
  agentLogLevel,
  AgentRuntimeLogger,
  agentDeploymentOptions,
  createAgentWorker,
  DEFAULT_TASK_QUEUE,
  shippedWorkflowBundle,
  type AgentWorker,
  type AgentWorkerDeployment,
  type AgentWorkerOptions,
} from "../worker.js";
import type { AgentEventsServeOptions } from "../serving.js";
import { devServerUiUrl } from "../../http/temporal-ui.js";
import type { AgentTracing } from "../telemetry/tracing.js";
import { replayCapFits } from "../replay-cap.js";
import { dataConverterFromEnv, withEncryptedFailures, writesPlainFailures } from "../../node/codec/config.js";
import type { AesGcmCodecOptions } from "../../node/codec/aes-gcm.js";
import { describeBlobStorage } from "../../node/blobs/config.js";
import { findConfigFile, loadServiceConfig, type AgentServiceConfig } from "./config.js";
import { temporalTarget } from "../../node/connection.js";
import { serveHealth } from "./health.js";
import { loadOptional, TRACING_PACKAGES } from "../../node/optional-package.js";
import { noServer } from "../../cli/program.js";
import { freePort } from "../../node/dev-server.js";
import { createAgentMetrics, type AgentMetrics } from "../telemetry/metrics.js";
import { tracingWanted } from "../telemetry/tracing-module.js";
import { parseBaseUrlList } from "../activities/model-policy.js";
import { parseProviderLimits, type ProviderLimits } from "../activities/provider-limits.js";

/** The agent's metrics and, when this process installed the runtime, the SDK's (fetched from the core's loopback exporter). */
async function scrape(metrics: AgentMetrics, core: string | undefined): Promise<string> {
  const own = await metrics.registry.metrics();
  if (!core) return own;
  const response = await fetch(`http://${core}/metrics`).catch(() => undefined);
  const runtime = response?.ok ? await response.text() : "# Temporal runtime metrics unavailable\n";
  return `${runtime.trimEnd()}\n${own}`;
}

/** One setting of the worker process: its flag, its environment variable, its config module key, its default. */
interface Setting {
  /** The flag without "--"; none: the environment only (a secret never goes on a command line). */
  flag?: string;
  /** The flag's value placeholder; none: a switch, which sets `set`. */
  arg?: string;
  /** A switch's value (what the environment variable would say), default "on". */
  set?: string;
  env?: string;
  /** The config module's key it overrides, if any. */
  config?: string;
  default?: string;
  help: string;
}

/** Every flag and environment variable of the worker process; --help prints this table. */
export const SETTINGS: readonly Setting[] = [
  { flag: "address", arg: "host:port", help: "overrides TEMPORAL_ADDRESS / the profile" },
  { flag: "namespace", arg: "name", help: "overrides TEMPORAL_NAMESPACE / the profile" },
  {
    flag: "task-queue",
    arg: "name",
    env: "JAI_TASK_QUEUE",
    default: `"${DEFAULT_TASK_QUEUE}"`,
    help: "the shared task queue",
  },
  {
    flag: "deployment-name",
    arg: "name",
    env: "TEMPORAL_DEPLOYMENT_NAME",
    default: "none (unversioned)",
    help: "serve a version of this Worker Deployment (Temporal's Worker Deployment Versioning; with --build-id): runs stay on the version they started on, sessions move to the current version at their next continue-as-new (Temporal server 1.30+; docs/crashes-and-upgrades.md)",
  },
  {
    flag: "build-id",
    arg: "id",
    env: "TEMPORAL_WORKER_BUILD_ID",
    help: "this build's id in the deployment (an image tag, a git SHA: new for every build whose workflows differ)",
  },
  {
    flag: "config",
    arg: "file",
    env: "JAI_CONFIG",
    default: "./jai.config.{js,mjs,ts} if present",
    help: "what the worker serves (tools, models, keys, ...)",
  },
  {
    flag: "workspace",
    arg: "dir",
    env: "JAI_WORKSPACE",
    default: "the working folder",
    help: "root of the default file tools",
  },
  {
    flag: "max-activities",
    arg: "n",
    env: "JAI_MAX_CONCURRENT_ACTIVITIES",
    default: "100",
    help: "model calls + tools at once",
  },
  {
    flag: "max-workflow-tasks",
    arg: "n",
    env: "JAI_MAX_CONCURRENT_WORKFLOW_TASKS",
    default: "40",
    help: "workflow tasks at once",
  },
  {
    flag: "max-replays",
    arg: "n",
    env: "JAI_MAX_CONCURRENT_REPLAYS",
    config: "maxConcurrentReplays",
    default: "no cap",
    help: "of them, tasks from the shared queue (replays) at once",
  },
  {
    flag: "context-cache-mb",
    arg: "n",
    env: "JAI_CONTEXT_CACHE_MB",
    config: "contextCacheBytes",
    default: "256",
    help: "byte budget of the model-context cache",
  },
  {
    flag: "health-port",
    arg: "n",
    env: "JAI_HEALTH_PORT",
    default: "none",
    help: "serve /healthz, /readyz and /metrics (0 = any free port)",
  },
  {
    flag: "health-host",
    arg: "host",
    env: "JAI_HEALTH_HOST",
    default: "127.0.0.1",
    help: "where they listen (they have no auth; 0.0.0.0 for an orchestrator's probes or Prometheus on another host, as the image does)",
  },
  {
    flag: "http-port",
    arg: "n",
    env: "JAI_HTTP_PORT",
    default: "none",
    help: "serve the run API, live events (SSE) and run console; `npm run serve` uses 8787. Every request needs Authorization: Bearer <JAI_HTTP_TOKEN>",
  },
  {
    env: "JAI_HTTP_TOKEN",
    default: "minted and printed in the console URL (…/#token=…)",
    help: 'the run API\'s token; "off": none (loopback only)',
  },
  {
    env: "JAI_HTTP_HOST",
    default: "127.0.0.1",
    help: "where the run API listens (anywhere else needs JAI_HTTP_TOKEN)",
  },
  { env: "JAI_TEMPORAL_UI", help: "the Temporal UI's URL, linked from the run console" },
  {
    env: "JAI_HTTP_ALLOWED_HOSTS",
    help: "host names (comma-separated) it answers to besides loopback and its address (others get 403)",
  },
  {
    flag: "shutdown-grace",
    arg: "duration",
    env: "JAI_SHUTDOWN_GRACE",
    default: "30s",
    help: "how long in-flight activities may finish on SIGTERM",
  },
  {
    flag: "workflow-bundle",
    arg: "file",
    env: "JAI_WORKFLOW_BUNDLE",
    default: "dist/workflow-bundle.js when present",
    help: "prebuilt bundle (`jai-agent bundle`)",
  },
  {
    flag: "no-route-model-calls",
    set: "off",
    env: "JAI_ROUTE_MODEL_CALLS",
    config: "routeModelCalls",
    default: "on",
    help: 'model calls on the shared queue (servers with eager activity execution: README "Eager dispatch")',
  },
  {
    flag: "no-demo-model",
    set: "off",
    env: "JAI_DEMO_MODEL",
    config: "demoModel",
    default: "on",
    help: "do not serve demo/offline-scripted",
  },
  {
    flag: "allowed-model-base-urls",
    arg: "l",
    env: "JAI_ALLOWED_MODEL_BASE_URLS",
    config: "allowedModelBaseUrls",
    default: "none",
    help: "comma-separated base URLs (self-hosted endpoints) where a run's model object may be served with this worker's provider keys, besides the base URLs of the config's models and @jai/ai's catalogue (README \"The worker process\")",
  },
  {
    flag: "provider-limits",
    arg: "json",
    env: "JAI_PROVIDER_LIMITS",
    config: "providerLimits",
    default: "none",
    help: 'caps on this worker\'s model calls by provider, e.g. {"openai":{"maxConcurrent":8,"requestsPerSecond":5},"*":{}}; merged over the config\'s, provider by provider (docs/provider-limits.md)',
  },
  {
    flag: "no-metrics",
    set: "off",
    env: "JAI_METRICS",
    default: "on",
    help: "no /metrics on the health port (Temporal's runtime metrics + the agent's)",
  },
  {
    env: "JAI_CODEC_MISSING_KEY",
    default: "retry",
    help: "terminate: end a run whose payloads this worker cannot decrypt (retry: Temporal retries its workflow task until a worker with the key serves it; the log names run and key)",
  },
  {
    env: "JAI_LOG_LEVEL",
    default: "WARN",
    help: "the Temporal runtime's log level (TRACE, DEBUG, INFO, WARN, ERROR); INFO adds worker state changes and the bundler's stats",
  },
];

/** Wraps `text` at `width`, continuation lines indented by `indent` spaces. */
function wrap(text: string, indent: number, width = 116): string {
  const lines = [""];
  for (const word of text.split(" ")) {
    const line = lines[lines.length - 1];
    if (line && indent + line.length + 1 + word.length > width) lines.push(word);
    else lines[lines.length - 1] = line ? `${line} ${word}` : word;
  }
  return lines.join(`\n${" ".repeat(indent)}`);
}

function usageLine(s: Setting): string {
  const name = s.flag ? `--${s.flag}${s.arg ? ` ${s.arg}` : ""}` : s.env!;
  const where = [
    s.flag && s.env ? (s.arg ? s.env : `${s.env}=${s.set ?? "on"}`) : undefined,
    s.config ? `config ${s.config}` : undefined,
  ].filter(Boolean);
  const text = `${where.length ? `${where.join("; ")}: ` : ""}${s.help}${s.default ? ` [default ${s.default}]` : ""}`;
  return `  ${name.padEnd(30)}${wrap(text, 32)}`;
}

export const WORKER_USAGE = `usage: jai-agent worker [options]

Connection: Temporal's environment configuration (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS_CLIENT_CERT_PATH/KEY_PATH, TEMPORAL_PROFILE + temporal.toml).
A flag wins over its environment variable, which wins over the config module's key.

${SETTINGS.filter((s) => s.flag)
  .map(usageLine)
  .join("\n")}

Environment only:
${SETTINGS.filter((s) => !s.flag)
  .map(usageLine)
  .join("\n")}

Traces: OTLP over HTTP when OTEL_TRACES_EXPORTER=otlp or OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set (standard OTEL_* variables).

Encryption (README "Encryption"): JAI_CODEC_KEYS="id:base64key,..." or JAI_CODEC_KEY_FILE=file, the first
key current, older ones still decrypt; JAI_CODEC_COMPRESS=1 deflates before encrypting.
`;

/**
 * Fast failover was removed (issue 54): a killed worker's calls are picked up by Temporal's heartbeat timeout and
 * sticky queue timeout (docs/crashes-and-upgrades.md, "A killed worker's calls"). Its flags are refused, so a
 * command line that asks for it fails and says why; its environment variables and config key are named in a
 * warning and ignored, so a deployment that still sets them keeps serving while it is rolled (runs recover
 * without it, only later).
 */
const REMOVED_FLAGS = ["fast-failover", "failover-links"];
const REMOVED_ENV = ["JAI_FAST_FAILOVER", "JAI_FAILOVER_LINKS", "JAI_FAILOVER_ADVERTISE", "JAI_FAILOVER_SECRET"];
const REMOVED =
  "fast failover was removed; Temporal's heartbeat and sticky queue timeouts hand a killed worker's calls to another worker (docs/crashes-and-upgrades.md)";

/** Throws for a removed flag on the command line; returns a warning naming the removed settings set elsewhere. */
export function removedSettings(argv: string[], env: NodeJS.ProcessEnv, config: object = {}): string | undefined {
  const flag = REMOVED_FLAGS.find((f) => argv.some((a) => a === `--${f}` || a.startsWith(`--${f}=`)));
  if (flag) throw new Error(`--${flag}: ${REMOVED}`);
  if ((config as { extensions?: unknown[] }).extensions?.length)
    throw new Error("extensions (config module): worker extensions were removed with fast failover, their only user");
  const set = REMOVED_ENV.filter((name) => env[name] !== undefined && env[name] !== "" && env[name] !== "off");
  const configured = (config as { fastFailover?: unknown }).fastFailover;
  if (configured !== undefined && configured !== false) set.push("fastFailover (config module)");
  return set.length ? `jai-agent worker: ${set.join(", ")} ignored: ${REMOVED}` : undefined;
}

/** The settings as given: each flag's value, else its environment variable's (a switch given says its `set`). */
function readSettings(
  argv: string[],
  env: NodeJS.ProcessEnv,
): { help: boolean; get(name: string): string | undefined } {
  const flags = SETTINGS.filter((s) => s.flag);
  const { values } = parseArgs({
    args: argv,
    options: {
      ...Object.fromEntries(flags.map((s) => [s.flag!, { type: s.arg ? ("string" as const) : ("boolean" as const) }])),
      help: { type: "boolean", short: "h" },
      // A failure's stack trace (src/cli/program.ts prints it).
      debug: { type: "boolean" },
    },
  });
  const byName = new Map(SETTINGS.map((s) => [s.flag ?? s.env!, s]));
  return {
    help: values.help === true,
    get(name) {
      const s = byName.get(name);
      if (!s) throw new Error(`no such setting: ${name}`);
      const given = s.flag ? (values as Record<string, string | boolean | undefined>)[s.flag] : undefined;
      if (typeof given === "string") return given;
      if (given === true) return s.set ?? "on";
      return s.env ? env[s.env] : undefined;
    },
  };
}

function positiveInt(value: string | undefined, name: string): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
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
  const log = options.log ?? ((line: string) => console.log(line));
  removedSettings(options.argv ?? [], env);
  const settings = readSettings(options.argv ?? [], env);
  if (settings.help) {
    log(WORKER_USAGE);
    return 0;
  }
  const plan = await planWorker(settings.get, env, options.cwd ?? process.cwd());
  const removed = removedSettings([], env, plan.config);
  if (removed) log(removed);
  const codec = codecFor(plan.config, env, log);
  const bundle = usableBundle(plan.bundleFile, codec.dataConverter, log);
  // /metrics lives on the health port: the SDK's runtime metrics (served by the core on a loopback port) and the agent's.
  const withMetrics = plan.healthPort !== undefined && settings.get("no-metrics") !== "off";
  const runtime = await installRuntime(withMetrics, env);
  // Traces when the standard OTEL_* environment asks for them (OTLP over HTTP); the shipped bundle has no tracing
  // interceptors, so the workflows are bundled here then. OpenTelemetry is loaded only then.
  const tracing = tracingWanted(env)
    ? await (
        await loadOptional("traces (OTEL_* environment)", TRACING_PACKAGES, () => import("../telemetry/tracing.js"))
      ).tracingFromEnv(env)
    : undefined;
  const connection = await NativeConnection.connect(plan.target.connectionOptions).catch((err: unknown) => {
    throw noServer(err, plan.target.connectionOptions.address) ?? err;
  });
  let health: Server | undefined;
  try {
    // Terminating needs no payloads, so no codec: it works on the runs this worker cannot read.
    codec.terminator.client = new Client({ connection, namespace: plan.target.namespace });
    // The run API and live events (createAgentWorker serves them, and closes them once drained).
    const agent = await createAgentWorker({
      ...agentOptions(plan, settings.get),
      connection,
      dataConverter: codec.dataConverter,
      metrics: runtime.metrics,
      tracing,
      onEvent: plan.config.onEvent,
      events: eventsOption(plan, settings.get),
      ...(bundle && !tracing ? { workflowBundle: { codePath: bundle } } : {}),
    });
    health = await serveHealthOf(agent, plan, settings.get, runtime, codec.keyErrors);
    log(describeWorker(plan, codec.dataConverter, health, agent, tracing));
    return await runUntilDrained(agent, log);
  } finally {
    health?.close();
    await tracing?.shutdown().catch(() => {});
    // run() closes only connections it opened itself.
    await connection.close().catch(() => {});
  }
}

type Get = (name: string) => string | undefined;

/** What the flags, the environment and the config module say the worker serves, and its limits. */
async function planWorker(get: Get, env: NodeJS.ProcessEnv, cwd: string) {
  const target = temporalTarget(env, { address: get("address"), namespace: get("namespace") });
  const taskQueue = get("task-queue") ?? DEFAULT_TASK_QUEUE;
  const configFile = findConfigFile(get("config"), cwd);
  const config: AgentServiceConfig = configFile ? await loadServiceConfig(configFile) : {};
  const tools = config.tools ?? createFileTools(get("workspace") ?? cwd);
  const demo = config.demoModel !== false && get("no-demo-model") !== "off";
  const models: Model<Api>[] = [...(config.models ?? []), ...(demo ? [registerDemoModel()] : [])];
  const maxWorkflowTasks = positiveInt(get("max-workflow-tasks"), "--max-workflow-tasks") ?? 40;
  const replaysFlag = positiveInt(get("max-replays"), "--max-replays");
  if (replaysFlag !== undefined && !replayCapFits(replaysFlag, maxWorkflowTasks))
    throw new Error(
      `--max-replays (JAI_MAX_CONCURRENT_REPLAYS) must be from 1 to --max-workflow-tasks - 1 (${maxWorkflowTasks - 1}), got ${replaysFlag}`,
    );
  const maxReplays = replaysFlag ?? config.maxConcurrentReplays;
  const bundleFile = get("workflow-bundle") ?? shippedWorkflowBundle();
  if (bundleFile && !existsSync(bundleFile)) throw new Error(`Workflow bundle not found: ${bundleFile}`);
  const workerOptions = {
    maxConcurrentActivityTaskExecutions: positiveInt(get("max-activities"), "--max-activities") ?? 100,
    maxConcurrentWorkflowTaskExecutions: maxWorkflowTasks,
    // On SIGTERM in-flight model calls and tools get this long to finish; then they are cancelled
    // and their heartbeat timeouts hand them to another worker.
    shutdownGraceTime: get("shutdown-grace") ?? "30s",
  };
  const cacheMb = positiveInt(get("context-cache-mb"), "--context-cache-mb");
  const healthPort = positiveInt(get("health-port"), "--health-port");
  const httpPort = positiveInt(get("http-port"), "--http-port");
  const providerLimits = providerLimitsOf(config, get("provider-limits"));
  const deployment = deploymentOf(get);
  return {
    target,
    taskQueue,
    configFile,
    config,
    tools,
    models,
    maxReplays,
    bundleFile,
    workerOptions,
    cacheMb,
    healthPort,
    httpPort,
    providerLimits,
    deployment,
  };
}

/**
 * The deployment version, when --deployment-name and --build-id (TEMPORAL_DEPLOYMENT_NAME and
 * TEMPORAL_WORKER_BUILD_ID, the names Temporal's Worker Controller sets) are given: both or neither.
 */
function deploymentOf(get: Get): AgentWorkerDeployment | undefined {
  const name = get("deployment-name")?.trim() || undefined;
  const buildId = get("build-id")?.trim() || undefined;
  if (name === undefined && buildId === undefined) return undefined;
  if (name === undefined || buildId === undefined)
    throw new Error(
      `--deployment-name (TEMPORAL_DEPLOYMENT_NAME) and --build-id (TEMPORAL_WORKER_BUILD_ID) go together: ${name === undefined ? "the name" : "the build id"} is missing`,
    );
  agentDeploymentOptions({ name, buildId }); // a name or id the server would refuse is refused here
  return { name, buildId };
}

/** The config module's provider limits, with the flag's (or the environment's) JSON over them, provider by provider. */
function providerLimitsOf(config: AgentServiceConfig, given: string | undefined): ProviderLimits | undefined {
  const overrides = given?.trim() ? parseProviderLimits(given, "--provider-limits (JAI_PROVIDER_LIMITS)") : undefined;
  if (!overrides) return config.providerLimits;
  return { ...config.providerLimits, ...overrides };
}
type Plan = Awaited<ReturnType<typeof planWorker>>;

/** The options of `createAgentWorker` the plan gives (the connection, codec, events and telemetry aside). */
function agentOptions(plan: Plan, get: Get): AgentWorkerOptions {
  const { config } = plan;
  return {
    namespace: plan.target.namespace,
    taskQueue: plan.taskQueue,
    tools: plan.tools,
    models: plan.models,
    // The operator's extra model endpoints: the config's and the flag's (or the environment's) together.
    allowedModelBaseUrls: [...(config.allowedModelBaseUrls ?? []), ...parseBaseUrlList(get("allowed-model-base-urls"))],
    getApiKey: config.getApiKey,
    compactContext: config.compactContext,
    contextCacheSize: config.contextCacheSize,
    contextCacheBytes: plan.cacheMb !== undefined ? plan.cacheMb * 1024 * 1024 : config.contextCacheBytes,
    mcpServers: config.mcpServers,
    routeModelCalls: get("no-route-model-calls") !== "off" && config.routeModelCalls !== false,
    webhooks: config.webhooks,
    ...(plan.providerLimits ? { providerLimits: plan.providerLimits } : {}),
    ...(plan.maxReplays !== undefined ? { maxConcurrentReplays: plan.maxReplays } : {}),
    ...(plan.deployment ? { deployment: plan.deployment } : {}),
    workerOptions: { ...plan.workerOptions, ...config.workerOptions },
  };
}

/** The data converter (the config module's, else the environment's codec) and what a missing key does. */
function codecFor(config: AgentServiceConfig, env: NodeJS.ProcessEnv, log: (line: string) => void) {
  // A payload this worker cannot decrypt fails its task; in a workflow task Temporal retries that until a
  // worker with the key takes it, so say which run and which key, once per pair, where operators look.
  // JAI_CODEC_MISSING_KEY=terminate ends such a run instead (its status and reason name the key).
  const missingKey = env.JAI_CODEC_MISSING_KEY ?? "retry";
  if (missingKey !== "retry" && missingKey !== "terminate")
    throw new Error(`JAI_CODEC_MISSING_KEY must be "retry" or "terminate", got "${missingKey}"`);
  const keyErrors = new Set<string>();
  const terminator: { client?: Client } = {}; // set once connected
  const onKeyError: NonNullable<AesGcmCodecOptions["onKeyError"]> = (err, context) => {
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
    if (!terminate) return;
    const reason = `codec key "${err.keyId}" ${err.reason === "missing-key" ? "missing" : "does not decrypt"} on worker ${os.hostname()}/${process.pid}: ${err.message}`;
    terminator
      .client!.workflow.getHandle(run)
      .terminate(reason)
      .catch((e: unknown) =>
        log(`jai-agent worker: could not terminate run ${run}: ${e instanceof Error ? e.message : String(e)}`),
      );
  };
  const configured =
    config.dataConverter ?? config.workerOptions?.dataConverter ?? dataConverterFromEnv(env, { onKeyError });
  // Under a codec, failure messages and stack traces go through it too (a config module's converter included).
  return { dataConverter: withEncryptedFailures(configured), keyErrors, terminator };
}

/** The prebuilt bundle, unless it writes failures in plain text and this worker has a payload codec. */
function usableBundle(
  bundleFile: string | undefined,
  dataConverter: DataConverter | undefined,
  log: (line: string) => void,
): string | undefined {
  if (bundleFile === undefined || !writesPlainFailures({ codePath: bundleFile }, dataConverter)) return bundleFile;
  log(
    `jai-agent worker: ${bundleFile} writes failures in plain text and this worker has a payload codec: ` +
      "bundling the workflows at start (make the bundle with `jai-agent bundle --encrypt-failures` to skip that)",
  );
  return undefined;
}

/** Temporal's runtime (its log level, and its metrics on a loopback port when /metrics is served) and the agent's metrics. */
async function installRuntime(withMetrics: boolean, env: NodeJS.ProcessEnv) {
  const coreMetrics = withMetrics ? `127.0.0.1:${await freePort()}` : undefined;
  // JAI_LOG_LEVEL (WARN), without the own queue's "No workflows registered" notice: it is by design there.
  const logger = new AgentRuntimeLogger(agentLogLevel(env)); // a bad level is an error, not swallowed below
  let installed = false;
  try {
    Runtime.install({
      logger,
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
    installed = coreMetrics !== undefined;
  } catch {
    // Already installed by the embedding process (its own telemetry options apply).
  }
  return { metrics: withMetrics ? createAgentMetrics() : undefined, core: installed ? coreMetrics : undefined };
}

/**
 * The run API, live events and console: where --http-port says; without it, as the config module's `events` says
 * (default none: a service's ports are the operator's to choose).
 */
function eventsOption(plan: Plan, get: Get): boolean | AgentEventsServeOptions {
  // The config's agents are what the run API and console start by name, however the server is configured.
  const agents = {
    ...(plan.config.agents?.length ? { agents: plan.config.agents } : {}),
    // And the config's tenant limits, which the run API enforces at start (docs/tenants.md).
    ...(plan.config.tenants ? { tenants: plan.config.tenants } : {}),
  };
  if (plan.httpPort === undefined) {
    const events = plan.config.events ?? false;
    return events === false ? false : { ...(events === true ? {} : events), ...agents };
  }
  const allowedHosts = get("JAI_HTTP_ALLOWED_HOSTS");
  return {
    host: get("JAI_HTTP_HOST"),
    port: plan.httpPort,
    token: get("JAI_HTTP_TOKEN"),
    ...(allowedHosts !== undefined ? { allowedHosts: allowedHosts.split(",").filter(Boolean) } : {}),
    temporalUiUrl: get("JAI_TEMPORAL_UI") ?? devServerUiUrl(plan.target.connectionOptions.address),
    ...agents,
  };
}

/** /healthz, /readyz and /metrics, when --health-port asks for them. */
async function serveHealthOf(
  agent: AgentWorker,
  plan: Plan,
  get: Get,
  runtime: Awaited<ReturnType<typeof installRuntime>>,
  keyErrors: Set<string>,
): Promise<Server | undefined> {
  if (plan.healthPort === undefined) return undefined;
  const metrics = runtime.metrics;
  return serveHealth(
    {
      healthy: () => agent.worker.getState() !== "FAILED",
      ready: () => agent.worker.getState() === "RUNNING",
      detail: () => ({
        state: agent.worker.getState(),
        taskQueue: plan.taskQueue,
        namespace: plan.target.namespace,
        ...(plan.deployment ? { deployment: plan.deployment } : {}),
        ...(keyErrors.size ? { undecryptableKeyIds: [...new Set([...keyErrors].map((k) => k.split("\n")[1]))] } : {}),
      }),
      ...(metrics ? { metrics: () => scrape(metrics, runtime.core) } : {}),
    },
    plan.healthPort,
    get("health-host"),
  );
}

/**
 * The banner: where the worker is, then what it serves (models, tools, the tools that wait for a person, MCP
 * servers) and how (tracing, encryption), so an operator sees the whole setup at a glance.
 */
function describeWorker(
  plan: Plan,
  dataConverter: DataConverter | undefined,
  health: Server | undefined,
  agent: AgentWorker,
  tracing: AgentTracing | undefined,
): string {
  const events = agent.events;
  // A minted token is printed once, in the console URL's fragment (it never reaches a server or a proxy's log).
  const consoleAt = events
    ? `; runs API and console on ${events.consoleUrl}${events.tokenMinted ? " (other clients: JAI_HTTP_TOKEN=<the token in that URL>)" : events.token ? " (token: JAI_HTTP_TOKEN)" : ""}`
    : "";
  const where = `${health ? `; health on :${(health.address() as { port: number }).port}` : ""}${consoleAt}`;
  const models = [...plan.models.map((m) => `${m.provider}/${m.id}`), "any provider with its API key"].join(", ");
  const config = plan.configFile ? `, config ${plan.configFile}` : "";
  const gated = plan.tools.flatMap((t) =>
    t.requiresApproval === true
      ? [t.name]
      : typeof t.requiresApproval === "function"
        ? [`${t.name} (when its predicate says)`]
        : [],
  );
  const mcp = (plan.config.mcpServers ?? []).map((m) => {
    // The command or origin only: arguments and URLs may carry secrets, and this line gets logged.
    const at = m.transport.type === "stdio" ? `stdio ${m.transport.command}` : `http ${originOf(m.transport.url)}`;
    const approval =
      m.requiresApproval === true
        ? "; approval: every tool"
        : Array.isArray(m.requiresApproval) && m.requiresApproval.length
          ? `; approval: ${m.requiresApproval.join(", ")}`
          : typeof m.requiresApproval === "function"
            ? "; approval: when its predicate says"
            : "";
    return `${m.name} (${at}${approval})`;
  });
  const codec = dataConverter?.payloadCodecs?.length ? "payload codec on" : "off (JAI_CODEC_KEYS)";
  const limits = Object.entries(plan.providerLimits ?? {}).map(([provider, l]) => {
    const caps = [
      l.maxConcurrent !== undefined ? `${l.maxConcurrent} at once` : undefined,
      l.requestsPerSecond !== undefined ? `${l.requestsPerSecond}/s` : undefined,
    ].filter(Boolean);
    return `${provider} ${caps.join(", ") || "Retry-After pauses only"}`;
  });
  return [
    `jai-agent worker: ${plan.target.describe}, task queue "${plan.taskQueue}"${config}${where}`,
    `  tools: ${plan.tools.map((t) => t.name).join(", ") || "(none)"}; models: ${models}`,
    `  approval required: ${gated.join(", ") || "(none)"}; MCP servers: ${mcp.join(", ") || "(none)"}`,
    `  tracing: ${tracing ? "on (OTLP)" : "off (OTEL_*)"}; encryption: ${codec}`,
    ...(dataConverter?.externalStorage ? [`  blob store: ${describeBlobStorage(dataConverter)}`] : []),
    ...(limits.length ? [`  provider limits (this worker): ${limits.join("; ")}`] : []),
    ...(plan.deployment
      ? [`  deployment: "${plan.deployment.name}" build "${plan.deployment.buildId}" (runs pinned to it)`]
      : []),
  ].join("\n");
}

/** A URL's origin, or "?" for one that does not parse (the MCP source refuses it later, with its reason). */
function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "?";
  }
}

/** Runs the worker until a signal drains it: 0 once drained, 1 when it failed. */
async function runUntilDrained(agent: AgentWorker, log: (line: string) => void): Promise<number> {
  const running = agent.run();
  log("ready");
  try {
    await running;
    log("jai-agent worker: drained, exiting");
    return 0;
  } catch (err) {
    log(`jai-agent worker failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}
