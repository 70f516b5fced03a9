/**
 * Public API of the durable agent loop (`jai-agent`). Never imported by
 * workflow code. Everything a process that only starts and follows runs needs
 * is `jai-agent/client` (re-exported here); the rest serves runs.
 */

/** Contracts, runs from a client, schedules, finished runs from history, encryption, connection: see entry/client.ts. */
export * from "./entry/client.js";

/** A worker that serves runs, and the workflow bundle it runs (bundle once, share across workers). */
export { createAgentWorker, bundleAgentWorkflows } from "./worker.js";
export type { AgentWorker, AgentWorkerOptions } from "./worker.js";
/** What every way of serving runs is given (worker, plugin, worker process config). */
export type { AgentServeOptions, AgentWorkerServeOptions } from "./serving.js";
/** The agent on a worker a team already has, as a Temporal plugin. */
export { AgentPlugin, type AgentPluginOptions } from "./plugin.js";
/** The worker process (`jai-agent worker`) and its config file's types. */
export { runWorkerProcess, type WorkerProcessOptions } from "./worker-process/run.js";
export { defineConfig, type AgentServiceConfig } from "./worker-process/config.js";

/** Provider failures as the loop sees them (the one classifier), API keys, compaction hooks. */
export { classifyModelOutcome, keyEnvVar, retryAfterMs } from "./activities/index.js";
export type { ApiKeyResolver, ContextCompactor } from "./activities/index.js";
/** Tools: workspace-confined files, a sub-agent as a tool, MCP servers. */
export { createFileTools } from "./tools/fs-tools.js";
export { agentTool, type AgentToolConfig } from "./subagents/agent-tool.js";
export type { McpServerConfig, McpStdioTransport, McpHttpTransport } from "./mcp/config.js";
/** Completion webhooks: how deliveries are signed. */
export { signWebhookBody, SIGNATURE_HEADER, DELIVERY_HEADER, type RunOutcome, type WebhookOptions } from "./webhooks/deliver.js";
export type { WebhookTarget } from "./webhooks/field.js";
/** Replaying recorded histories against the loop before a deploy. */
export { readHistoryFile, replayHistory, replayOptions, checkAgentHistory, ReplayInputError, type ReplayOutcome } from "./replay.js";
/** The codec server the Temporal UI decrypts through. */
export { createCodecServer, codecRequestHandler, bearerTokens, type CodecServerOptions, type CodecAuthorizer } from "./codec/server.js";
/** A local Temporal dev server (tests, demos). */
export { startDevServer, findTemporalCli, type DevServer, type DevServerOptions } from "./dev-server.js";
