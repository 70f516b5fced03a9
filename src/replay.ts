/**
 * Replay debugging: run a recorded history against the current workflow code
 * and report whether it is still deterministic, and where it diverges if not.
 */
import { readFile } from "node:fs/promises";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import type { temporal } from "@temporalio/proto";
import { Worker, type InjectedSinks, type ReplayWorkerOptions } from "@temporalio/worker";
import { AGENT_RUN_WORKFLOW, type AgentSinks } from "./workflows/definitions.js";
import { noMetricsSink } from "./telemetry/metrics.js";
import { bundleAgentWorkflows } from "./worker.js";

export type History = temporal.api.history.v1.IHistory;

export interface ReplayOutcome {
  /** Events in the history. */
  events: number;
  /** Set when the current code does not reproduce the history. */
  error?: { message: string; eventId?: number; event?: string; nondeterminism: boolean };
}

/** A history that cannot be replayed as an agent run: unreadable, empty, or another workflow's. `source` names the file or workflow. */
export class ReplayInputError extends Error {
  constructor(
    readonly source: string,
    readonly reason: string,
  ) {
    super(`${source}: ${reason}`);
    this.name = "ReplayInputError";
  }
}

/** Reads a history exported by the Temporal UI or `temporal workflow show --output json`; ReplayInputError names the file when it cannot. */
export async function readHistoryFile(file: string): Promise<History> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ReplayInputError(
      file,
      `cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  let json: { events?: unknown[] } | unknown[];
  try {
    json = JSON.parse(text) as { events?: unknown[] } | unknown[];
  } catch (err) {
    throw new ReplayInputError(file, `not a JSON history (${(err as Error).message})`);
  }
  try {
    return historyFromJSON(Array.isArray(json) ? { events: json } : json);
  } catch (err) {
    throw new ReplayInputError(file, `not a Temporal history (${(err as Error).message})`);
  }
}

/** Checks that a history is an agent run's, so a replay result means something. */
export function checkAgentHistory(history: History, source: string): void {
  const events = history.events ?? [];
  if (events.length === 0) throw new ReplayInputError(source, "the history has no events");
  const started = events[0].workflowExecutionStartedEventAttributes;
  if (!started) throw new ReplayInputError(source, "the history does not start with WorkflowExecutionStarted");
  const type = started.workflowType?.name;
  if (type !== AGENT_RUN_WORKFLOW)
    throw new ReplayInputError(
      source,
      `not an agent run: workflow type "${type ?? "?"}", expected "${AGENT_RUN_WORKFLOW}"`,
    );
}

type Event = NonNullable<History["events"]>[number];

/** Events a workflow task's commands produce: where a changed loop shows first. */
const COMMAND_EVENTS = [
  "activityTaskScheduledEventAttributes",
  "timerStartedEventAttributes",
  "markerRecordedEventAttributes",
  "workflowPropertiesModifiedEventAttributes",
  "upsertWorkflowSearchAttributesEventAttributes",
  "activityTaskCancelRequestedEventAttributes",
  "timerCanceledEventAttributes",
  "startChildWorkflowExecutionInitiatedEventAttributes",
  "signalExternalWorkflowExecutionInitiatedEventAttributes",
  "workflowExecutionCompletedEventAttributes",
  "workflowExecutionFailedEventAttributes",
  "workflowExecutionCanceledEventAttributes",
  "workflowExecutionContinuedAsNewEventAttributes",
] as const;

function describeEvent(e: Event): string {
  const kind = COMMAND_EVENTS.find((k) => e[k]);
  const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
  return `${kind?.replace(/EventAttributes$/, "") ?? "event"}${activity ? ` ${activity}` : ""}`;
}

/**
 * Finds the first event the current code disagrees with: replays prefixes cut
 * after each workflow task (binary search) and returns the first command event
 * of the first workflow task whose replay fails.
 */
async function locateDivergence(
  history: History,
  options: ReplayWorkerOptions,
): Promise<{ eventId: number; what: string } | undefined> {
  const events = history.events ?? [];
  const cuts = events.flatMap((e, i) => (e.workflowTaskCompletedEventAttributes ? [i] : []));
  const prefixEnd = (k: number) => {
    let end = cuts[k] + 1;
    while (end < events.length && !events[end].workflowTaskScheduledEventAttributes) end++;
    return end;
  };
  const fails = async (k: number) => {
    try {
      await Worker.runReplayHistory(options, { events: events.slice(0, prefixEnd(k)) }, "locate");
      return false;
    } catch {
      return true;
    }
  };
  let lo = 0;
  let hi = cuts.length - 1;
  if (hi < 0 || !(await fails(hi))) return undefined;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (await fails(mid)) hi = mid;
    else lo = mid + 1;
  }
  const first = events.slice(cuts[lo] + 1).find((e) => COMMAND_EVENTS.some((k) => e[k]));
  const at = first ?? events[cuts[lo]];
  return { eventId: Number(at.eventId), what: first ? describeEvent(first) : "workflow task completed" };
}

/** Replay worker options: the loop's event sink is registered (and silent: nothing is re-emitted on replay). */
export function replayOptions(workflowBundle: { code: string }): ReplayWorkerOptions {
  const sinks: InjectedSinks<AgentSinks> = {
    agent: { emit: { fn: () => {}, callDuringReplay: false } },
    metrics: noMetricsSink(),
  };
  return { workflowBundle, sinks };
}

/** Replays one agent run's history; never throws for a divergence, it reports it. ReplayInputError when it is not an agent run's history. */
export async function replayHistory(
  history: History,
  workflowId = "replay",
  bundle?: { code: string },
): Promise<ReplayOutcome> {
  checkAgentHistory(history, workflowId);
  const events = history.events?.length ?? 0;
  const options = replayOptions(bundle ?? (await bundleAgentWorkflows()));
  try {
    await Worker.runReplayHistory(options, history, workflowId);
    return { events };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const nondeterminism = (err as Error)?.name === "DeterminismViolationError" || /nondetermin/i.test(message);
    const where = await locateDivergence(history, options).catch(() => undefined);
    return { events, error: { message, eventId: where?.eventId, event: where?.what, nondeterminism } };
  }
}
