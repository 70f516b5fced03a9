/**
 * `jai-agent/client`: what a process that only starts and watches runs needs.
 * It loads neither the worker (native code), the bundler nor the dev server.
 */
export type * from "../shared/contracts.js";
export {
  scheduleAgentRun,
  listAgentSchedules,
  describeAgentSchedule,
  pauseAgentSchedule,
  unpauseAgentSchedule,
  triggerAgentSchedule,
  deleteAgentSchedule,
  InvalidScheduleError,
  type ScheduleAgentRunOptions,
  type AgentScheduleSpec,
  type AgentScheduleInfo,
} from "../client/schedules.js";
export {
  startAgentRun,
  getAgentRun,
  InvalidRunInputError,
  RunFinishedError,
  RunUpdateRejectedError,
  TEMPORAL_PAYLOAD_LIMIT_BYTES,
} from "../client/client.js";
export type { AgentRunHandle, StartAgentRunOptions } from "../client/client.js";
export { TenantLimitError, TENANT_NAME, type TenantConfig, type TenantsConfig } from "../shared/tenants.js";
export { DEFAULT_TASK_QUEUE, AGENT_RUN_WORKFLOW } from "../shared/definitions.js";
export {
  storyFromHistory,
  storyFromEncodedHistory,
  storyTranscript,
  type RunStory,
  type StoryItem,
} from "../client/history-story.js";
export {
  AesGcmCodec,
  CodecKeyError,
  CodecConfigError,
  type AesGcmCodecOptions,
  type CodecKey,
} from "../node/codec/aes-gcm.js";
export {
  codecFromEnv,
  dataConverterFromEnv,
  parseCodecKeys,
  newCodecKey,
  withEncryptedFailures,
} from "../node/codec/config.js";
export { decodeHistory, decodeHistoryPayloads } from "../node/codec/history.js";
export {
  AgentBlobStorage,
  blobStorage,
  blobStorageFromEnv,
  BlobStoreConfigError,
  BlobStoreNotConfiguredError,
  resolveHistoryClaims,
  type BlobStorageOptions,
} from "../node/blobs/config.js";
export {
  BlobCorruptError,
  BlobDriver,
  BlobNotFoundError,
  FileBlobDriver,
  PostgresBlobDriver,
  type BlobClaim,
  type BlobOwner,
  type BlobStats,
} from "../node/blobs/drivers.js";
export { sweepBlobs, type SweepOptions, type SweepReport } from "../node/blobs/sweep.js";
export { temporalTarget, type TemporalTarget } from "../node/connection.js";
