/** createAgentWorker: one Temporal worker that serves agent runs with the given tools. */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client } from "@temporalio/client";
import { bundleWorkflowCode, NativeConnection, Worker, type InjectedSinks, type WorkerOptions } from "@temporalio/worker";
import type { Api, Model } from "@jai/ai";
import { createActivities, type ApiKeyResolver, type ContextCompactor } from "./activities/index.js";
import type { AgentEventSink, AgentTool } from "./types.js";
import type { McpServerConfig } from "./mcp/config.js";
import { McpToolSource } from "./mcp/source.js";
import type { WebhookOptions } from "./webhooks/deliver.js";
import { DEFAULT_TASK_QUEUE, type AgentSinks } from "./workflows/definitions.js";

export { DEFAULT_TASK_QUEUE };

/** How long a run's workflow task (or query) waits for the worker that holds it cached before any worker takes it. */
export const DEFAULT_STICKY_TIMEOUT = "1s";

export interface AgentWorkerOptions {
  /** Connection to Temporal; default: a new one to TEMPORAL_ADDRESS or localhost:7233 (closed when the worker stops). */
  connection?: NativeConnection;
  /** Temporal namespace; default "default". */
  namespace?: string;
  /** Task queue; default "jai-agent". */
  taskQueue?: string;
  /** Tools the runs may call. */
  tools?: AgentTool<any>[];
  /** Extra models a run may name as "provider/modelId" (e.g. a local server or the faux provider). */
  models?: Model<Api>[];
  /** API keys per provider; default: @jai/ai's environment variables. */
  getApiKey?: ApiKeyResolver;
  /** Receives every AgentEvent of every run served here. */
  onEvent?: AgentEventSink;
  /** Runs whose model context this worker keeps in memory (the rest is read from the workflow); default 100. */
  contextCacheSize?: number;
  /** Compaction for runs started with `compaction: "worker"` (e.g. an LLM summary). */
  compactContext?: ContextCompactor;
  /**
   * MCP servers whose tools runs may call, named `<server>__<tool>`. Each worker
   * opens its own connection (a stdio server is a child process of the worker).
   */
  mcpServers?: McpServerConfig[];
  /** Completion webhooks: signing secrets by name (else `JAI_WEBHOOK_SECRET_<NAME>`), whether private hosts may be reached. */
  webhooks?: WebhookOptions;
  /** A bundle from `bundleAgentWorkflows()` (or a file holding one), to skip bundling (seconds) when starting many workers. */
  workflowBundle?: { code: string } | { codePath: string };
  /** Any other Temporal worker option (concurrency limits, interceptors, ...). */
  workerOptions?: Partial<WorkerOptions>;
}

/** Where the workflow sources are: `.ts` when running from source (tsx, jest), `.js` when built. */
export function agentWorkflowsPath(): string {
  const js = fileURLToPath(new URL("./workflows/index.js", import.meta.url));
  return existsSync(js) ? js : js.replace(/\.js$/, ".ts");
}

// Workflow sources import "./x.js" as Node ESM wants; webpack must map that to "./x.ts" when bundling sources.
export const webpackConfigHook = (config: any) => {
  config.resolve = { ...config.resolve, extensionAlias: { ".js": [".ts", ".js"] } };
  return config;
};

/**
 * Bundles the agent workflows once; pass the result to several workers via
 * `workflowBundle`. `workflowsPath` bundles another workflows module instead
 * (e.g. a changed loop, to replay old histories against it before deploying).
 */
export async function bundleAgentWorkflows(workflowsPath = agentWorkflowsPath()): Promise<{ code: string }> {
  return bundleWorkflowCode({ workflowsPath, webpackConfigHook, logger: quietLogger });
}

const quietLogger = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} } as any;

/** A running worker; `runUntil`/`run` as Temporal's Worker, closing the connection it opened itself. */
export interface AgentWorker {
  /** The Temporal worker underneath. */
  readonly worker: Worker;
  /** Task queue it polls. */
  readonly taskQueue: string;
  /** Runs until `promise` settles, then shuts down; resolves or rejects with it. */
  runUntil<R>(promise: Promise<R> | (() => Promise<R>)): Promise<R>;
  /** Runs until `shutdown()` or a signal. */
  run(): Promise<void>;
  /** Starts a graceful shutdown. */
  shutdown(): void;
}

export async function createAgentWorker(options: AgentWorkerOptions = {}): Promise<AgentWorker> {
  const owned = options.connection === undefined;
  const connection = options.connection ?? (await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? "localhost:7233" }));
  const taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  const onEvent = options.onEvent;
  const namespace = options.namespace ?? "default";
  // NativeConnection serves a Client too: activities use it to read a run's context on a cache miss.
  const client = new Client({ connection, namespace });
  const mcp = options.mcpServers?.length ? new McpToolSource(options.mcpServers) : undefined;
  const activities = createActivities({
    mcp,
    webhooks: options.webhooks,
    tools: options.tools ?? [],
    models: options.models,
    getApiKey: options.getApiKey,
    onEvent,
    client,
    contextCacheSize: options.contextCacheSize,
    compactContext: options.compactContext,
  });
  const sinks: InjectedSinks<AgentSinks> = {
    agent: {
      emit: {
        fn: (info, event) => onEvent?.(event, { workflowId: info.workflowId, runId: info.runId }),
        callDuringReplay: false,
      },
    },
  };
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection,
      namespace,
      taskQueue,
      activities,
      ...(options.workflowBundle
        ? { workflowBundle: options.workflowBundle }
        : { workflowsPath: agentWorkflowsPath(), bundlerOptions: { webpackConfigHook } }),
      sinks,
      // Cancellation reaches an activity with a heartbeat's answer: keep that under ~1 s, not 80% of the heartbeat timeout.
      maxHeartbeatThrottleInterval: "1s",
      // A killed worker's sticky queue holds its runs' next workflow task, and the context query of the worker that
      // takes over its model call, until this timeout (Temporal's default: 10 s). At 1 s a run recovers within its
      // heartbeat timeout + ~3 s; the price is a full history replay elsewhere when a busy sticky worker misses 1 s.
      stickyQueueScheduleToStartTimeout: DEFAULT_STICKY_TIMEOUT,
      ...options.workerOptions,
    });
  } catch (err) {
    await mcp?.close();
    if (owned) await connection.close();
    throw err;
  }
  const closeOwned = async () => {
    await mcp?.close();
    if (owned) await connection.close();
  };
  return {
    worker,
    taskQueue,
    async runUntil(promise) {
      try {
        return await worker.runUntil(promise);
      } finally {
        await closeOwned();
      }
    },
    async run() {
      try {
        await worker.run();
      } finally {
        await closeOwned();
      }
    },
    shutdown: () => worker.shutdown(),
  };
}
