/**
 * `jai-agent/client`: what a process that only starts and watches runs needs.
 * It loads neither the worker (native code), the bundler nor the dev server.
 */
export * from "../types.js";
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
} from "../schedules.js";
export { startAgentRun, getAgentRun, InvalidRunInputError } from "../client.js";
export type { AgentRunHandle, StartAgentRunOptions } from "../client.js";
export { DEFAULT_TASK_QUEUE, AGENT_RUN_WORKFLOW } from "../workflows/definitions.js";
export { storyFromHistory, storyTranscript, type RunStory, type StoryItem } from "../history-transcript.js";
export { temporalTarget, type TemporalTarget } from "../worker-process/connection.js";
