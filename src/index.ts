/** Public API of the durable agent loop. Never imported by workflow code. */
export type * from "./contracts.js";
export { createAgentWorker, bundleAgentWorkflows, DEFAULT_TASK_QUEUE } from "./worker.js";
export type { AgentWorker, AgentWorkerOptions } from "./worker.js";
export { startAgentRun, getAgentRun, InvalidRunInputError, RunFinishedError, RunUpdateRejectedError, TEMPORAL_PAYLOAD_LIMIT_BYTES } from "./client.js";
export type { AgentRunHandle, StartAgentRunOptions } from "./client.js";
export { classifyModelOutcome, keyEnvVar, retryAfterMs } from "./activities/index.js";
export type { ApiKeyResolver, ContextCompactor } from "./activities/index.js";
export { readHistoryFile, replayHistory, replayOptions, checkAgentHistory, ReplayInputError, type ReplayOutcome } from "./replay.js";
export { storyFromHistory, storyFromEncodedHistory, storyTranscript, type RunStory, type StoryItem } from "./history-transcript.js";
export { AesGcmCodec, CodecKeyError, CodecConfigError, type AesGcmCodecOptions, type CodecKey } from "./codec/aes-gcm.js";
export { codecFromEnv, dataConverterFromEnv, parseCodecKeys, newCodecKey } from "./codec/config.js";
export { decodeHistory, decodeHistoryPayloads } from "./codec/history.js";
export { createCodecServer, codecRequestHandler, bearerTokens, type CodecServerOptions, type CodecAuthorizer } from "./codec/server.js";
export { startDevServer, findTemporalCli, type DevServer, type DevServerOptions } from "./dev-server.js";
export { createFileTools } from "./tools/fs-tools.js";
export {
  scheduleAgentRun,
  listAgentSchedules,
  describeAgentSchedule,
  pauseAgentSchedule,
  unpauseAgentSchedule,
  triggerAgentSchedule,
  deleteAgentSchedule,
  type ScheduleAgentRunOptions,
  type AgentScheduleSpec,
  type AgentScheduleInfo,
} from "./schedules.js";
export { agentTool, type AgentToolConfig } from "./subagents/agent-tool.js";
export type { McpServerConfig, McpStdioTransport, McpHttpTransport } from "./mcp/config.js";
export { signWebhookBody, SIGNATURE_HEADER, DELIVERY_HEADER, type RunOutcome, type WebhookOptions } from "./webhooks/deliver.js";
export type { WebhookTarget } from "./webhooks/field.js";
export { AgentPlugin, type AgentPluginOptions } from "./plugin.js";
export { runWorkerProcess, type WorkerProcessOptions } from "./worker-process/run.js";
export { defineConfig, type AgentServiceConfig } from "./worker-process/config.js";
export { temporalTarget, type TemporalTarget } from "./worker-process/connection.js";
