/**
 * Scheduled agent runs on Temporal Schedules: each firing starts a normal
 * `agentRun` (visible, watchable, searchable) with the workflow id
 * `<scheduleId>-<fire time>`. The schedule lives in the Temporal server, not in a worker.
 */
import type { Client, ScheduleDescription, ScheduleHandle, ScheduleOverlapPolicy } from "@temporalio/client";
import { msToNumber } from "@temporalio/common";
import { InvalidRunInputError } from "./client.js";
import type { AgentRunInput } from "../shared/contracts.js";
import { AGENT_RUN_WORKFLOW, DEFAULT_TASK_QUEUE } from "../shared/definitions.js";
import { isObject } from "../shared/plain-object.js";
import { checkDuration, validateRunInput } from "../shared/run-input.js";

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

/** A schedule as `describeAgentSchedule` reports it: what `list` says, and what it is made of. */
export interface AgentScheduleDetails extends AgentScheduleInfo {
  /** When it fires: as it was created (kept in its memo), else read back from the server's calendars. */
  spec: { cron: string[]; intervals: string[]; timezone?: string };
  /** What it does when a run is still going at the next firing, e.g. "skip". */
  overlap: string;
  taskQueue: string;
  /** The run input each firing starts (decoded with the client's codec). */
  input: AgentRunInput;
  /** Its latest firings: the run each started, when it was due and when it started; newest last. */
  recentActions: { workflowId: string; scheduledAt: Date; takenAt: Date }[];
  createdAt: Date;
  /** Runs it has started. */
  actionsTaken: number;
}

/** The memo key a schedule made here keeps its spec under, as given (the server turns cron strings into calendars). */
const SPEC_MEMO = "agentScheduleSpec";

/** A schedule option that cannot work; `field` names it (e.g. "spec.cron[1]"). Nothing was created. */
export class InvalidScheduleError extends InvalidRunInputError {
  override name = "InvalidScheduleError";
  constructor(
    /** The option at fault, as a path into ScheduleAgentRunOptions. */
    readonly field: string,
    problem: string,
  ) {
    super(`Invalid schedule: "${field}" ${problem}`);
  }
}

const OVERLAPS = ["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"];
const SPEC_KEYS = ["cron", "interval", "timezone"];
/** What Temporal's cron strings accept besides fields. */
const CRON_MACROS = ["@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"];
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

interface CronField {
  name: string;
  min: number;
  max: number;
  names?: string[];
}
const SECOND: CronField = { name: "second", min: 0, max: 59 };
const CRON_FIELDS: CronField[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS },
  { name: "day of week", min: 0, max: 7, names: DAYS },
];
const YEAR: CronField = { name: "year", min: 2000, max: 2100 };

function timezoneProblem(zone: string): string | undefined {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return undefined;
  } catch {
    return `is not a known IANA time zone: ${JSON.stringify(zone)}`;
  }
}

/** What is wrong with one part of a cron field (e.g. "1-5", "MON", "0/15"), as far as it can be told here. */
function cronPartProblem(part: string, field: CronField): string | undefined {
  const [base, step, extra] = part.split("/");
  if (extra !== undefined || (step !== undefined && !/^[1-9]\d*$/.test(step)))
    return `has an invalid step in its ${field.name} field ("${part}")`;
  if (base === "*" || base === "?") return undefined;
  const range = base.split("-");
  if (range.length > 2) return `has too many dashes in its ${field.name} field ("${part}")`;
  if (range.length === 2 && /^\d+$/.test(range[0]) && /^\d+$/.test(range[1]) && Number(range[0]) > Number(range[1]))
    return `has a ${field.name} range that ends before it starts ("${part}")`;
  for (const value of range) {
    if (/^\d+$/.test(value)) {
      const n = Number(value);
      if (n < field.min || n > field.max) return `has ${field.name} ${n}, not in range [${field.min}-${field.max}]`;
    } else if (/^[a-z]+$/i.test(value)) {
      if (!field.names?.some((name) => value.toLowerCase().startsWith(name)))
        return `has "${value}" in its ${field.name} field, which takes numbers${field.names ? " or names" : ""}`;
    } else if (value === "") return `has an empty value in its ${field.name} field ("${part}")`;
    // Anything else (e.g. "1#2") is for the server to judge.
  }
  return undefined;
}

/** What is wrong with one cron string, as far as can be told without the server (which checks the rest). */
function cronProblem(cron: unknown, timezone: unknown): string | undefined {
  if (typeof cron !== "string" || cron.trim() === "") return "must be a non-empty cron string";
  let rest = cron.trim();
  const tz = /^CRON_TZ=(\S+)\s+/.exec(rest);
  if (tz) {
    const problem = timezoneProblem(tz[1]);
    if (problem) return `has a CRON_TZ that ${problem}`;
    if (tz[1] !== (timezone ?? ""))
      return `has CRON_TZ=${tz[1]}, which differs from "spec.timezone" (${JSON.stringify(timezone ?? "UTC")}): give the zone once, in "spec.timezone"`;
    rest = rest.slice(tz[0].length);
  }
  // A "#" starts a comment (Temporal's cron strings allow one at the end).
  rest = rest.replace(/#.*$/, "").trim();
  if (rest.startsWith("@")) {
    const every = /^@every\s+(\S+?)(?:\/(\S+))?$/.exec(rest);
    if (every) {
      for (const d of [every[1], every[2]].filter((x): x is string => x !== undefined)) {
        try {
          if (!(msToNumber(d as never) > 0)) return `has "@every" with a duration that is not positive ("${d}")`;
        } catch {
          return `has "@every" with "${d}", which is not a duration (e.g. "1h", "30m")`;
        }
      }
      return undefined;
    }
    return CRON_MACROS.includes(rest.toLowerCase())
      ? undefined
      : `is not a cron expression: ${JSON.stringify(cron)} (use 5 to 7 fields, ${CRON_MACROS.join(", ")} or "@every <duration>")`;
  }
  const parts = rest.split(/\s+/);
  if (parts.length < 5 || parts.length > 7)
    return `must have 5 to 7 fields ("minute hour day-of-month month day-of-week", then optionally year, or seconds first and year last), got ${parts.length}: ${JSON.stringify(cron)}`;
  const fields =
    parts.length === 5 ? CRON_FIELDS : parts.length === 6 ? [...CRON_FIELDS, YEAR] : [SECOND, ...CRON_FIELDS, YEAR];
  for (let i = 0; i < parts.length; i++) {
    for (const part of parts[i].split(",")) {
      const problem = cronPartProblem(part, fields[i]);
      if (problem) return `${problem}: ${JSON.stringify(cron)}`;
    }
  }
  return undefined;
}

function specProblem(spec: unknown): InvalidScheduleError | undefined {
  if (spec === undefined) return new InvalidScheduleError("spec", `is missing: give { cron } or { interval }`);
  if (!isObject(spec)) return new InvalidScheduleError("spec", `must be an object with "cron" or "interval"`);
  for (const key of Object.keys(spec))
    if (!SPEC_KEYS.includes(key))
      return new InvalidScheduleError(
        `spec.${key}`,
        `is not a schedule spec field (use "cron", "interval" or "timezone")`,
      );
  if (spec.cron === undefined && spec.interval === undefined)
    return new InvalidScheduleError("spec", `needs "cron" or "interval"`);
  if (spec.cron !== undefined) {
    if (Array.isArray(spec.cron)) {
      if (spec.cron.length === 0) return new InvalidScheduleError("spec.cron", "must not be an empty list");
      for (let i = 0; i < spec.cron.length; i++) {
        const problem = cronProblem(spec.cron[i], spec.timezone);
        if (problem) return new InvalidScheduleError(`spec.cron[${i}]`, problem);
      }
    } else if (typeof spec.cron !== "string") {
      return new InvalidScheduleError("spec.cron", "must be a cron string or a list of them");
    } else {
      const problem = cronProblem(spec.cron, spec.timezone);
      if (problem) return new InvalidScheduleError("spec.cron", problem);
    }
  }
  if (spec.interval !== undefined) {
    const problem = checkDuration(spec.interval, "spec.interval");
    if (problem) return new InvalidScheduleError("spec.interval", problem.replace(/^"spec\.interval" /, ""));
    if (msToNumber(spec.interval as never) < 1000)
      return new InvalidScheduleError(
        "spec.interval",
        `must be at least 1 second, got ${JSON.stringify(spec.interval)}`,
      );
  }
  if (spec.timezone !== undefined) {
    if (typeof spec.timezone !== "string" || spec.timezone === "")
      return new InvalidScheduleError("spec.timezone", 'must be an IANA time zone name, e.g. "Europe/Paris"');
    const problem = timezoneProblem(spec.timezone);
    if (problem) return new InvalidScheduleError("spec.timezone", problem);
  }
  return undefined;
}

/**
 * The first problem of a schedule's options (the schedule's own, then the run
 * input's), or undefined. Run input problems are InvalidRunInputErrors naming
 * the field, as startAgentRun gives them.
 */
export function scheduleOptionsProblem(options: unknown): InvalidRunInputError | undefined {
  if (!isObject(options)) return new InvalidScheduleError("options", "must be an object");
  const { scheduleId, spec, overlap, taskQueue, paused, note, ...input } = options;
  if (typeof scheduleId !== "string" || scheduleId.trim() === "")
    return new InvalidScheduleError("scheduleId", "must be a non-empty string");
  const problem = specProblem(spec);
  if (problem) return problem;
  if (overlap !== undefined && (typeof overlap !== "string" || !OVERLAPS.includes(overlap)))
    return new InvalidScheduleError("overlap", `must be one of ${OVERLAPS.join(", ")}, got ${JSON.stringify(overlap)}`);
  if (taskQueue !== undefined && (typeof taskQueue !== "string" || taskQueue === ""))
    return new InvalidScheduleError("taskQueue", "must be a non-empty string");
  if (paused !== undefined && typeof paused !== "boolean")
    return new InvalidScheduleError("paused", "must be a boolean");
  if (note !== undefined && typeof note !== "string") return new InvalidScheduleError("note", "must be a string");
  const inputProblem = validateRunInput(input);
  return inputProblem ? new InvalidRunInputError(`Invalid run input: ${inputProblem}`) : undefined;
}

/** The field a schedule the server refused is wrong in, from its message (it checks cron ranges, zones, intervals). */
function refusedField(message: string): string {
  if (/interval/i.test(message)) return "spec.interval";
  if (/time ?zone/i.test(message)) return "spec.timezone";
  if (/cron|second|minute|hour|day|month|year|step/i.test(message)) return "spec.cron";
  return "spec";
}

function toSpec(spec: AgentScheduleSpec) {
  const cron = spec.cron === undefined ? [] : Array.isArray(spec.cron) ? spec.cron : [spec.cron];
  return {
    ...(cron.length > 0 ? { cronExpressions: cron } : {}),
    ...(spec.interval !== undefined ? { intervals: [{ every: spec.interval as never }] } : {}),
    ...(spec.timezone ? { timezone: spec.timezone } : {}),
  };
}

/** Creates a schedule whose every firing is an agent run with this input. The input is checked first; nothing is created when it is wrong. */
export async function scheduleAgentRun(client: Client, options: ScheduleAgentRunOptions): Promise<ScheduleHandle> {
  const problem = scheduleOptionsProblem(options);
  if (problem) throw problem;
  const { scheduleId, spec, overlap, taskQueue, paused, note, ...input } = options;
  try {
    return await client.schedule.create({
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
      memo: { [SPEC_MEMO]: spec },
    });
  } catch (err) {
    // What the checks above cannot tell (e.g. "0 0 31 2 *" is fine, a zone Go does not know): the server's
    // INVALID_ARGUMENT, which the SDK throws as a TypeError. It created nothing.
    if (err instanceof TypeError)
      throw new InvalidScheduleError(refusedField(err.message), `was refused by the server: ${err.message}`);
    throw err;
  }
}

type Calendar = ScheduleDescription["spec"]["calendars"] extends (infer C)[] | undefined ? C : never;
type CalendarRange = { start: number | string; end?: number | string; step?: number };

const SHORT = (v: number | string) => (typeof v === "string" ? v.slice(0, 3) : String(v));

/** One cron field from the server's calendar ranges: "*", "9", "1-5", "0-59/15", "MON-FRI". */
function cronField(ranges: CalendarRange[] | undefined, min: number | string, max: number | string): string {
  if (!ranges?.length) return "*";
  return ranges
    .map(({ start, end = start, step = 1 }) => {
      const all = start === min && end === max;
      const base = all ? "*" : start === end ? SHORT(start) : `${SHORT(start)}-${SHORT(end)}`;
      return step > 1 ? `${base}/${step}` : base;
    })
    .join(",");
}

/** A calendar the server describes, written back as the cron string it stands for (seconds first when not 0). */
function calendarCron(c: Calendar): string {
  const cal = c as unknown as Record<string, CalendarRange[] | undefined> & { comment?: string };
  const fields = [
    cronField(cal.minute, 0, 59),
    cronField(cal.hour, 0, 23),
    cronField(cal.dayOfMonth, 1, 31),
    cronField(cal.month, "JANUARY", "DECEMBER"),
    cronField(cal.dayOfWeek, "SUNDAY", "SATURDAY"),
  ];
  const second = cronField(cal.second, 0, 59);
  return [
    ...(second === "0" ? [] : [second]),
    ...fields,
    ...(cal.year?.length ? [cronField(cal.year, 0, 0)] : []),
  ].join(" ");
}

/** An interval in the words a person gives it: "1h", "90m", "30s", or ms. */
function every(ms: number): string {
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["m", 60_000],
    ["s", 1000],
  ] as const)
    if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
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

/** A schedule and what it is made of: its spec, the run input it starts, next firings and latest runs. */
export async function describeAgentSchedule(client: Client, scheduleId: string): Promise<AgentScheduleDetails> {
  const d = await client.schedule.getHandle(scheduleId).describe();
  const given = d.memo?.[SPEC_MEMO] as AgentScheduleSpec | undefined;
  const asList = (v: unknown) => (v === undefined ? [] : Array.isArray(v) ? v.map(String) : [String(v)]);
  const spec = given
    ? {
        cron: asList(given.cron),
        intervals: asList(given.interval).map((i) => (/^\d+$/.test(i) ? every(Number(i)) : i)),
        ...(given.timezone ? { timezone: given.timezone } : {}),
      }
    : {
        cron: (d.spec.calendars ?? []).map(calendarCron),
        intervals: (d.spec.intervals ?? []).map((i) => every(Number(i.every))),
        ...(d.spec.timezone ? { timezone: d.spec.timezone } : {}),
      };
  const action = d.action as { taskQueue?: string; args?: unknown[] };
  return {
    ...info(scheduleId, d),
    spec,
    overlap: String(d.policies.overlap).toLowerCase(),
    taskQueue: action.taskQueue ?? DEFAULT_TASK_QUEUE,
    input: (action.args?.[0] ?? {}) as AgentRunInput,
    recentActions: d.info.recentActions.map((a) => ({
      workflowId: a.action.workflow.workflowId,
      scheduledAt: a.scheduledAt,
      takenAt: a.takenAt,
    })),
    createdAt: d.info.createdAt,
    actionsTaken: d.info.numActionsTaken,
  };
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
