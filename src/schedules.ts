/**
 * Scheduled agent runs on Temporal Schedules: each firing starts a normal
 * `agentRun` (visible, watchable, searchable) with the workflow id
 * `<scheduleId>-<fire time>`. The schedule lives in the Temporal server, not in a worker.
 */
import type { Client, ScheduleDescription, ScheduleHandle, ScheduleOverlapPolicy } from "@temporalio/client";
import { InvalidRunInputError } from "./client.js";
import type { AgentRunInput } from "./types.js";
import { AGENT_RUN_WORKFLOW, DEFAULT_TASK_QUEUE } from "./workflows/definitions.js";
import { validateRunInput } from "./workflows/input.js";

/** When a schedule fires: a cron expression (or several), or a fixed interval ("2s", "1h", ms). */
export interface AgentScheduleSpec {
  /** Cron expressions, e.g. "0 9 * * MON-FRI" (in UTC unless `timezone`). */
  cron?: string | string[];
  /** Every this long. */
  interval?: string | number;
  /** IANA time zone of the cron expressions; default UTC. */
  timezone?: string;
}

export interface ScheduleAgentRunOptions extends AgentRunInput {
  /** The schedule's id (unique in the namespace); fired runs are `<scheduleId>-<fire time>`. */
  scheduleId: string;
  /** When to fire. */
  spec: AgentScheduleSpec;
  /** What to do when a run is still going at the next firing; default "skip". */
  overlap?: "skip" | "buffer_one" | "buffer_all" | "cancel_other" | "terminate_other" | "allow_all";
  /** Task queue of the workers; default "jai-agent". */
  taskQueue?: string;
  /** Create it paused. */
  paused?: boolean;
  /** A note shown with the schedule (e.g. who made it and why). */
  note?: string;
}

/** A schedule as `listAgentSchedules` reports it. */
export interface AgentScheduleInfo {
  scheduleId: string;
  paused: boolean;
  note?: string;
  /** Next fire times. */
  nextActionTimes: Date[];
  /** Workflow ids of its latest runs, newest last. */
  recentRuns: string[];
}

function toSpec(spec: AgentScheduleSpec) {
  const cron = spec.cron === undefined ? [] : Array.isArray(spec.cron) ? spec.cron : [spec.cron];
  if (cron.length === 0 && spec.interval === undefined)
    throw new InvalidRunInputError(`Invalid schedule: "spec" needs "cron" or "interval"`);
  return {
    ...(cron.length > 0 ? { cronExpressions: cron } : {}),
    ...(spec.interval !== undefined ? { intervals: [{ every: spec.interval as never }] } : {}),
    ...(spec.timezone ? { timezone: spec.timezone } : {}),
  };
}

/** Creates a schedule whose every firing is an agent run with this input. The input is checked first; nothing is created when it is wrong. */
export async function scheduleAgentRun(client: Client, options: ScheduleAgentRunOptions): Promise<ScheduleHandle> {
  const { scheduleId, spec, overlap, taskQueue, paused, note, ...input } = options;
  if (typeof scheduleId !== "string" || scheduleId === "")
    throw new InvalidRunInputError(`Invalid schedule: "scheduleId" must be a non-empty string`);
  const problem = validateRunInput(input);
  if (problem) throw new InvalidRunInputError(`Invalid run input: ${problem}`);
  return client.schedule.create({
    scheduleId,
    spec: toSpec(spec),
    action: {
      type: "startWorkflow",
      workflowType: AGENT_RUN_WORKFLOW,
      args: [input],
      taskQueue: taskQueue ?? DEFAULT_TASK_QUEUE,
      workflowId: scheduleId,
    },
    policies: { overlap: (overlap ?? "skip").toUpperCase() as NonNullable<ScheduleOverlapPolicy> },
    state: { paused: paused ?? false, ...(note ? { note } : {}) },
  });
}

const info = (scheduleId: string, d: ScheduleDescription): AgentScheduleInfo => ({
  scheduleId,
  paused: d.state.paused,
  ...(d.state.note ? { note: d.state.note } : {}),
  nextActionTimes: d.info.nextActionTimes,
  recentRuns: d.info.recentActions.map((a) => a.action.workflow.workflowId),
});

/** The schedules that start agent runs. */
export async function listAgentSchedules(client: Client): Promise<AgentScheduleInfo[]> {
  const out: AgentScheduleInfo[] = [];
  for await (const summary of client.schedule.list()) {
    if (summary.action?.type !== "startWorkflow" || summary.action.workflowType !== AGENT_RUN_WORKFLOW) continue;
    out.push(info(summary.scheduleId, await client.schedule.getHandle(summary.scheduleId).describe()));
  }
  return out;
}

export async function describeAgentSchedule(client: Client, scheduleId: string): Promise<AgentScheduleInfo> {
  return info(scheduleId, await client.schedule.getHandle(scheduleId).describe());
}

/** Stops firing until `unpauseAgentSchedule`; runs already started go on. */
export async function pauseAgentSchedule(client: Client, scheduleId: string, note?: string): Promise<void> {
  await client.schedule.getHandle(scheduleId).pause(note);
}

export async function unpauseAgentSchedule(client: Client, scheduleId: string, note?: string): Promise<void> {
  await client.schedule.getHandle(scheduleId).unpause(note);
}

/** Fires once now (the overlap policy applies). */
export async function triggerAgentSchedule(client: Client, scheduleId: string): Promise<void> {
  await client.schedule.getHandle(scheduleId).trigger();
}

/** Deletes the schedule; runs it started are not affected. */
export async function deleteAgentSchedule(client: Client, scheduleId: string): Promise<void> {
  await client.schedule.getHandle(scheduleId).delete();
}
