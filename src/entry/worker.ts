/** `jai-agent/worker`: serving agent runs: the worker factory, the plugin, the worker process and its config helpers. */
export type * from "../shared/contracts.js";
export { createAgentWorker, bundleAgentWorkflows, agentWorkflowsPath, DEFAULT_TASK_QUEUE } from "../worker/worker.js";
export type { AgentWorker, AgentWorkerOptions } from "../worker/worker.js";
export { AgentPlugin, type AgentPluginOptions } from "../worker/plugin.js";
export { runWorkerProcess, type WorkerProcessOptions } from "../worker/process/run.js";
export { defineConfig, type AgentServiceConfig } from "../worker/process/config.js";
export { temporalTarget, type TemporalTarget } from "../node/connection.js";
export { createFileTools } from "../worker/tools/fs-tools.js";
export { agentTool, type AgentToolConfig } from "../worker/subagents/agent-tool.js";
export { EventDeduper } from "../shared/event-ids.js";
export type { McpServerConfig, McpStdioTransport, McpHttpTransport } from "../worker/mcp/config.js";
export {
  signWebhookBody,
  SIGNATURE_HEADER,
  DELIVERY_HEADER,
  type RunOutcome,
  type WebhookOptions,
  type WebhookSecret,
} from "../worker/webhooks/deliver.js";
export type { WebhookTarget } from "../shared/webhook-field.js";
export { registerDemoModel, DEMO_LABEL } from "../demo/offline-model.js";
export type { ApiKeyResolver, ContextCompactor } from "../worker/activities/index.js";
export { ProviderLimitsError, type ProviderLimit, type ProviderLimits } from "../worker/activities/provider-limits.js";
