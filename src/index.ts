/** Public API of the durable agent loop. Never imported by workflow code. */
export * from "./types.js";
export { createAgentWorker, bundleAgentWorkflows, DEFAULT_TASK_QUEUE } from "./worker.js";
export type { AgentWorker, AgentWorkerOptions } from "./worker.js";
export { startAgentRun, getAgentRun, InvalidRunInputError } from "./client.js";
export type { AgentRunHandle, StartAgentRunOptions } from "./client.js";
export { classifyModelOutcome, keyEnvVar, retryAfterMs } from "./activities/index.js";
export type { ApiKeyResolver } from "./activities/index.js";
export { createFileTools } from "./tools/fs-tools.js";
