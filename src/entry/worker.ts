/** `jai-agent/worker`: serving agent runs: the worker factory, the plugin, the worker process and its config helpers. */
export type * from "../contracts.js";
export { createAgentWorker, bundleAgentWorkflows, agentWorkflowsPath, DEFAULT_TASK_QUEUE } from "../worker.js";
export type { AgentWorker, AgentWorkerOptions } from "../worker.js";
export { AgentPlugin, type AgentPluginOptions } from "../plugin.js";
export { runWorkerProcess, type WorkerProcessOptions } from "../worker-process/run.js";
export { defineConfig, type AgentServiceConfig } from "../worker-process/config.js";
export { temporalTarget, type TemporalTarget } from "../worker-process/connection.js";
export { createFileTools } from "../tools/fs-tools.js";
export { agentTool, type AgentToolConfig } from "../subagents/agent-tool.js";
export { EventDeduper } from "../events/identity.js";
export type { McpServerConfig, McpStdioTransport, McpHttpTransport } from "../mcp/config.js";
export {
  signWebhookBody,
  SIGNATURE_HEADER,
  DELIVERY_HEADER,
  type RunOutcome,
  type WebhookOptions,
  type WebhookSecret,
} from "../webhooks/deliver.js";
export type { WebhookTarget } from "../webhooks/field.js";
export { registerDemoModel, DEMO_LABEL } from "../demo/offline-model.js";
export type { ApiKeyResolver, ContextCompactor } from "../activities/index.js";
export { ProviderLimitsError, type ProviderLimit, type ProviderLimits } from "../activities/provider-limits.js";
