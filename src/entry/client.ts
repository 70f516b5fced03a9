/**
 * `jai-agent/client`: what a process that only starts and watches runs needs.
 * It loads neither the worker (native code), the bundler nor the dev server.
 */
export type * from "../contracts.js";
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
} from "../schedules.js";
export {
  startAgentRun,
  getAgentRun,
  InvalidRunInputError,
  RunFinishedError,
  RunUpdateRejectedError,
  TEMPORAL_PAYLOAD_LIMIT_BYTES,
} from "../client.js";
export type { AgentRunHandle, StartAgentRunOptions } from "../client.js";
export { TenantLimitError, TENANT_NAME, type TenantConfig, type TenantsConfig } from "../tenants.js";
export { DEFAULT_TASK_QUEUE, AGENT_RUN_WORKFLOW } from "../workflows/definitions.js";
export {
  storyFromHistory,
  storyFromEncodedHistory,
  storyTranscript,
  type RunStory,
  type StoryItem,
} from "../history-story.js";
export {
  AesGcmCodec,
  CodecKeyError,
  CodecConfigError,
  type AesGcmCodecOptions,
  type CodecKey,
} from "../codec/aes-gcm.js";
export {
  codecFromEnv,
  dataConverterFromEnv,
  parseCodecKeys,
  newCodecKey,
  withEncryptedFailures,
} from "../codec/config.js";
export { decodeHistory, decodeHistoryPayloads } from "../codec/history.js";
export {
  AgentBlobStorage,
  blobStorage,
  blobStorageFromEnv,
  BlobStoreConfigError,
  BlobStoreNotConfiguredError,
  resolveHistoryClaims,
  type BlobStorageOptions,
} from "../blobs/config.js";
export {
  BlobCorruptError,
  BlobDriver,
  BlobNotFoundError,
  FileBlobDriver,
  PostgresBlobDriver,
  type BlobClaim,
  type BlobOwner,
  type BlobStats,
} from "../blobs/drivers.js";
export { sweepBlobs, type SweepOptions, type SweepReport } from "../blobs/sweep.js";
export { temporalTarget, type TemporalTarget } from "../worker-process/connection.js";
