/** The activities of the agent loop, bound to one worker's tools, models, keys and event sink. */
import { getEnvApiKey, type Api, type Model } from "@jai/ai";
import type { AgentEventSink, AgentTool } from "../types.js";
import type { Client } from "@temporalio/client";
import { ContextCache } from "./context-cache.js";
import { createModelActivity, type ApiKeyResolver } from "./model.js";
import { createSetupActivity } from "./setup.js";
import { createToolActivities } from "./tool.js";

export interface ActivityDeps {
  /** The tools runs may call, by name. */
  tools: AgentTool<any>[];
  /** Extra models that "provider/modelId" may name. */
  models?: Model<Api>[];
  /** API keys; default: the provider's environment variable. */
  getApiKey?: ApiKeyResolver;
  /** Receives activity-level events (message_start/update, tool_execution_update). */
  onEvent?: AgentEventSink;
  /** Reads a run's model context on a cache miss (see ContextCache). */
  client?: Client;
  /** Runs whose model context the worker keeps in memory; default 100. */
  contextCacheSize?: number;
}

export function createActivities(deps: ActivityDeps) {
  const names = new Set<string>();
  for (const tool of deps.tools) {
    if (names.has(tool.name)) throw new Error(`Two tools are named "${tool.name}": tool names must be unique`);
    names.add(tool.name);
  }
  return {
    resolveRunSetup: createSetupActivity(deps.tools, deps.models ?? []),
    streamAssistantMessage: createModelActivity(
      deps.getApiKey ?? ((provider) => getEnvApiKey(provider)),
      deps.onEvent,
      new ContextCache(() => deps.client, deps.contextCacheSize),
    ),
    ...createToolActivities(new Map(deps.tools.map((t) => [t.name, t])), deps.onEvent),
  };
}

export { classifyModelOutcome, keyEnvVar, redact, retryAfterMs, type CallFacts, type ModelOutcome } from "./classify.js";
export type { ApiKeyResolver } from "./model.js";
