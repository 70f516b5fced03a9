/**
 * Public API of the durable agent loop (`jai-agent`). Never imported by
 * workflow code. It is the two entry points together, and what neither needs:
 *
 * - `jai-agent/client` (entry/client.ts): contracts, starting and following
 *   runs, schedules, finished runs from history, encryption, the connection;
 * - `jai-agent/worker` (entry/worker.ts): serving runs (worker, plugin, worker
 *   process, config), tools, MCP, webhooks;
 * - here only: the failure classifier, replay, the codec server, a dev server.
 */
export * from "./entry/client.js";
export * from "./entry/worker.js";
// Both entry points carry these: one binding each.
export { DEFAULT_TASK_QUEUE } from "./shared/definitions.js";
export { temporalTarget, type TemporalTarget } from "./node/connection.js";

/** What every way of serving runs is given (worker, plugin, worker process config). */
export type { AgentServeOptions, AgentWorkerServeOptions } from "./worker/serving.js";
/** Provider failures as the loop sees them (the one classifier). */
export { classifyModelOutcome, keyEnvVar, retryAfterMs } from "./worker/activities/index.js";
/** Replaying recorded histories against the loop before a deploy. */
export {
  readHistoryFile,
  replayHistory,
  replayOptions,
  checkAgentHistory,
  ReplayInputError,
  type ReplayOutcome,
} from "./worker/replay.js";
/** The codec server the Temporal UI decrypts through. */
export {
  createCodecServer,
  codecRequestHandler,
  bearerTokens,
  CodecServerConfigError,
  type CodecServerOptions,
  type CodecAuthorizer,
} from "./http/codec-server.js";
/** A local Temporal dev server (tests, demos). */
export { startDevServer, findTemporalCli, type DevServer, type DevServerOptions } from "./node/dev-server.js";
