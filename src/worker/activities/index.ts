/** The activities of the agent loop, bound to one worker's tools, models, keys and event sink. */
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import { getEnvApiKey, type Api, type Model } from "@jai/ai";
import type { AgentMessage, AgentTool } from "../../shared/contracts.js";
import type { ModelContextRef } from "../../shared/wire.js";
import { currentRun, withHeartbeats } from "./heartbeat.js";
import type { Client } from "@temporalio/client";
import { ContextCache } from "./context-cache.js";
import { createModelActivity } from "./model.js";
import { checkOutput } from "./output.js";
import { searchAttributeCheck } from "./namespace-attributes.js";
import { createSetupActivity } from "./setup.js";
import { ModelPolicy } from "./model-policy.js";
import { ProviderLimiter, type ProviderLimiterHooks } from "./provider-limits.js";
import { createToolActivities } from "./tool.js";
import type { McpToolSource } from "../mcp/source.js";
import { createWebhookActivity } from "../webhooks/deliver.js";
import type { AgentWorkerServeOptions } from "../serving.js";
import { FailureType } from "../../shared/failure-types.js";

/** The activities' part of a worker's options, and what the worker adds. */
export interface ActivityDeps
  extends Pick<
    AgentWorkerServeOptions,
    | "models"
    | "allowedModelBaseUrls"
    | "getApiKey"
    | "onEvent"
    | "contextCacheSize"
    | "contextCacheBytes"
    | "compactContext"
    | "webhooks"
    | "providerLimits"
  > {
  /** The tools runs may call, by name. */
  tools: AgentTool<any>[];
  /** Reads a run's model context on a cache miss (see ContextCache). */
  client?: Client;
  /** Told whether each model call's cached context prefix was used (metrics). */
  onContextCache?: (hit: boolean) => void;
  /** The worker's payloads are encrypted: runs keep content out of plain-text search attributes. */
  encrypted?: boolean;
  /**
   * The worker has a blob store (External Storage, docs/large-payloads.md): tool results and errors up to this many
   * bytes are kept whole, the run's limits cutting only the model's copy. Undefined: cut to the limits.
   */
  storedResultBytes?: number;
  /** A cache made by the caller (to read its stats); else one is made from the context cache options. */
  contextCache?: ContextCache;
  /** The task queue only this worker polls: routed model replies name it so the run's next call comes back here. */
  ownTaskQueue?: () => string | undefined;
  /** The worker's sticky queue timeout (ms), named in routed replies with `ownTaskQueue` (workflows/routing.ts). */
  stickyTimeoutMs?: () => number | undefined;
  /** The worker's identity, named in failures that say which worker lacks a model or a key (default `pid@host`). */
  workerIdentity?: () => string | undefined;
  /** MCP servers whose tools runs may call (listed at each run's setup). */
  mcp?: McpToolSource;
  /** Told of waits and pauses at the provider limits (metrics). */
  providerLimitHooks?: ProviderLimiterHooks;
}

/** Shrinks a context to about `budgetTokens`. Contract: keep every tool call with its result, in order. */
export type ContextCompactor = (
  messages: AgentMessage[],
  options: { budgetTokens: number; model: Model<Api>; signal: AbortSignal },
) => Promise<AgentMessage[]>;

export function createActivities(deps: ActivityDeps) {
  const names = new Set<string>();
  for (const tool of deps.tools) {
    if (names.has(tool.name)) throw new Error(`Two tools are named "${tool.name}": tool names must be unique`);
    names.add(tool.name);
  }
  const contexts =
    deps.contextCache ??
    new ContextCache(() => deps.client, {
      maxBytes: deps.contextCacheBytes,
      maxRuns: deps.contextCacheSize,
      onLookup: deps.onContextCache,
    });
  // Where the worker's keys may go: its models (and the catalogue's) at their base URLs, plus the allowed ones.
  const modelPolicy = new ModelPolicy(deps.models ?? [], deps.allowedModelBaseUrls ?? []);
  const toolMap = new Map(deps.tools.map((t) => [t.name, t]));
  // One limiter for every model call of this worker (its shared and own queues alike); a bad limit is refused here.
  const limiter = deps.providerLimits ? new ProviderLimiter(deps.providerLimits, deps.providerLimitHooks) : undefined;
  const mcp = deps.mcp;
  const toolActivities = createToolActivities(
    toolMap,
    deps.onEvent,
    (call, output) =>
      contexts.rememberOutput(currentRun(), call.outputKey ?? Context.current().info.activityId, call.toolName, output),
    { keepBytes: deps.storedResultBytes },
  );
  // A call may land on a worker that did not set the run up: it lists the MCP server first.
  const withMcpTool = <I extends { toolName: string }, O>(activity: (input: I) => Promise<O>) =>
    mcp
      ? async (input: I) => {
          if (!toolMap.has(input.toolName)) {
            const tool = await mcp.find(input.toolName);
            if (tool) toolMap.set(tool.name, tool);
          }
          return activity(input);
        }
      : activity;
  // One check (cached per namespace) for the setup and for runs refused before it.
  const hasSearchAttributes = searchAttributeCheck(() => deps.client);
  return {
    resolveRunSetup: createSetupActivity(deps.tools, deps.models ?? [], hasSearchAttributes, {
      encrypted: deps.encrypted,
      blobStore: deps.storedResultBytes !== undefined,
      policy: modelPolicy,
      workerIdentity: deps.workerIdentity,
      ownTaskQueue: deps.ownTaskQueue,
      listMore: mcp
        ? async (names) => {
            // A native tool's name wins: an MCP tool named like one is left out (with a warning).
            const listed = await mcp.listTools(
              names,
              deps.tools.map((t) => t.name),
            );
            for (const tool of listed) toolMap.set(tool.name, tool);
            return listed;
          }
        : undefined,
    }),
    /** Whether the run's namespace has the agent search attributes: a run refused before its setup asks, to show it failed. */
    async agentSearchAttributesExist(): Promise<boolean> {
      return hasSearchAttributes(Context.current().info.workflowNamespace ?? "default");
    },
    streamAssistantMessage: createModelActivity(
      deps.getApiKey ?? ((provider) => getEnvApiKey(provider)),
      deps.onEvent,
      contexts,
      {
        ownTaskQueue: deps.ownTaskQueue,
        stickyMs: deps.stickyTimeoutMs,
        policy: modelPolicy,
        workerIdentity: deps.workerIdentity,
        limits: limiter && !limiter.empty ? limiter : undefined,
      },
    ),
    /** Runs the worker's compactor on a run's context (read by reference, like a model call's). */
    async compactContext(input: {
      context: ModelContextRef;
      budgetTokens: number;
      model: Model<Api>;
    }): Promise<AgentMessage[]> {
      if (!deps.compactContext)
        throw ApplicationFailure.nonRetryable(
          "This worker has no compactContext function",
          FailureType.CompactionUnavailable,
        );
      // The compactor may call the model with the worker's keys: a model from history that it does not serve is not handed over.
      const verdict = modelPolicy.check(input.model);
      if (!verdict.served)
        throw ApplicationFailure.nonRetryable(
          `Cannot compact with model ${input.model.provider}/${input.model.id}: ${verdict.reason}`,
          FailureType.ModelUnsupported,
        );
      const messages = await contexts.resolve(currentRun(), input.context, (why) => Context.current().log.warn(why));
      return withHeartbeats((signal) =>
        deps.compactContext!(messages, { budgetTokens: input.budgetTokens, model: input.model, signal }),
      );
    },
    deliverRunWebhook: createWebhookActivity(deps.webhooks),
    /** Typed results: validates a candidate final answer against the run's `output` schema (a local activity). */
    checkOutput,
    prepareToolCall: withMcpTool(toolActivities.prepareToolCall),
    executeTool: withMcpTool(toolActivities.executeTool),
    executeFastTool: withMcpTool(toolActivities.executeFastTool),
  };
}

export {
  ContextCache,
  DEFAULT_CONTEXT_CACHE_BYTES,
  type ContextCacheOptions,
  type ContextCacheStats,
} from "./context-cache.js";
export {
  classifyModelOutcome,
  keyEnvVar,
  redact,
  retryAfterMs,
  type CallFacts,
  type ModelOutcome,
} from "./classify.js";
export type { ApiKeyResolver } from "./model.js";
export {
  checkProviderLimits,
  parseProviderLimits,
  ProviderLimiter,
  ProviderLimitsError,
  type ProviderLimit,
  type ProviderLimiterHooks,
  type ProviderLimits,
  type ProviderPermit,
} from "./provider-limits.js";
