/**
 * Where a turn's time went, read from a run's history: the span between two consecutive model calls' starts
 * split into the model call's run, the workflow tasks' waits and runs, the tool calls' queue waits and runs, the
 * next model call's queue wait (on a worker's own queue or the shared one) and routed calls that gave up on their
 * worker (schedule-to-start timeouts), and workflow tasks lost to a sticky queue's timeout (a replay elsewhere).
 * Used by the side-by-side bench (`versus.ts`) on its slowest turns.
 */
import type { Client } from "@temporalio/client";
import type proto from "@temporalio/proto";

type Event = proto.temporal.api.history.v1.IHistoryEvent;

/** Milliseconds by where they went; `other` is what the events do not account for. */
export interface TurnTime {
  total: number;
  modelRun: number;
  workflowTaskWait: number;
  workflowTaskRun: number;
  /** Workflow tasks that timed out (a sticky queue's schedule-to-start: the task went to the shared queue). */
  stickyTimeouts: number;
  toolWait: number;
  toolRun: number;
  /** The next model call's wait in a worker's own queue (the call was routed). */
  modelWaitOwn: number;
  /** The next model call's wait in the shared queue. */
  modelWaitShared: number;
  /** Routed model calls that waited out their schedule-to-start timeout, then went to the shared queue. */
  routedTimeouts: number;
  routedTimeoutCount: number;
  other: number;
}

const ms = (t: Event["eventTime"]) =>
  t ? Number(t.seconds ?? 0) * 1000 + Math.floor(Number(t.nanos ?? 0) / 1e6) : NaN;
const TIMEOUT_SCHEDULE_TO_START = 2; // temporal.api.enums.v1.TimeoutType

/** The time between the starts of model calls `k` and `k + 1` (0-based, counted by started calls) of one run. */
export function turnTimes(events: Event[], modelActivity: string, sharedQueue: string): TurnTime[] {
  const byId = new Map<string, Event>();
  for (const e of events) byId.set(String(e.eventId), e);
  const scheduled = (id: unknown) => byId.get(String(id))?.activityTaskScheduledEventAttributes;
  const isModel = (id: unknown) => scheduled(id)?.activityType?.name === modelActivity;
  const starts = events.filter(
    (e) => e.activityTaskStartedEventAttributes && isModel(e.activityTaskStartedEventAttributes.scheduledEventId),
  );
  const turns: TurnTime[] = [];
  for (let k = 0; k + 1 < starts.length; k++) {
    const from = ms(starts[k].eventTime);
    const to = ms(starts[k + 1].eventTime);
    const t: TurnTime = {
      total: to - from,
      modelRun: 0,
      workflowTaskWait: 0,
      workflowTaskRun: 0,
      stickyTimeouts: 0,
      toolWait: 0,
      toolRun: 0,
      modelWaitOwn: 0,
      modelWaitShared: 0,
      routedTimeouts: 0,
      routedTimeoutCount: 0,
      other: 0,
    };
    // Spans are clipped to [from, to]: a span's end event (by time) inside the window counts.
    const clip = (a: number, b: number) => Math.max(0, Math.min(b, to) - Math.max(a, from));
    const wftScheduled = new Map<string, number>();
    for (const e of events) {
      const at = ms(e.eventTime);
      if (e.workflowTaskScheduledEventAttributes) wftScheduled.set(String(e.eventId), at);
      const ws = e.workflowTaskStartedEventAttributes;
      if (ws) t.workflowTaskWait += clip(wftScheduled.get(String(ws.scheduledEventId)) ?? at, at);
      const wc = e.workflowTaskCompletedEventAttributes;
      if (wc) t.workflowTaskRun += clip(ms(byId.get(String(wc.startedEventId))?.eventTime), at);
      const wt = e.workflowTaskTimedOutEventAttributes;
      if (wt) t.stickyTimeouts += clip(wftScheduled.get(String(wt.scheduledEventId)) ?? at, at);
      const as = e.activityTaskStartedEventAttributes;
      if (as) {
        const s = scheduled(as.scheduledEventId);
        const wait = clip(ms(byId.get(String(as.scheduledEventId))?.eventTime), at);
        if (!isModel(as.scheduledEventId)) t.toolWait += wait;
        else if (s?.taskQueue?.name === sharedQueue) t.modelWaitShared += wait;
        else t.modelWaitOwn += wait;
      }
      const ac = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
      if (ac) {
        const run = clip(ms(byId.get(String(ac.startedEventId))?.eventTime), at);
        if (isModel(ac.scheduledEventId)) t.modelRun += run;
        else t.toolRun += run;
      }
      const at2 = e.activityTaskTimedOutEventAttributes;
      if (
        at2 &&
        isModel(at2.scheduledEventId) &&
        at2.failure?.timeoutFailureInfo?.timeoutType === TIMEOUT_SCHEDULE_TO_START
      ) {
        const span = clip(ms(byId.get(String(at2.scheduledEventId))?.eventTime), at);
        t.routedTimeouts += span;
        if (span > 0) t.routedTimeoutCount++;
      }
    }
    t.other =
      t.total -
      t.modelRun -
      t.workflowTaskWait -
      t.workflowTaskRun -
      t.stickyTimeouts -
      t.toolWait -
      t.toolRun -
      t.modelWaitOwn -
      t.modelWaitShared -
      t.routedTimeouts;
    turns.push(t);
  }
  return turns;
}

/** The turns of the slowest `share` of `gaps` (run, index), summed by where their time went, as one line. */
export async function slowestTurns(
  client: Client,
  gaps: { workflowId: string; index: number; ms: number }[],
  share: number,
  modelActivity: string,
  sharedQueue: string,
): Promise<string> {
  const slow = [...gaps].sort((a, b) => b.ms - a.ms).slice(0, Math.max(1, Math.ceil(gaps.length * share)));
  const sum: Record<string, number> = {};
  let n = 0;
  for (const g of slow) {
    const events = (await client.workflow.getHandle(g.workflowId).fetchHistory()).events ?? [];
    const turn = turnTimes(events, modelActivity, sharedQueue)[g.index];
    if (!turn) continue;
    n++;
    for (const [k, v] of Object.entries(turn)) sum[k] = (sum[k] ?? 0) + v;
  }
  if (n === 0) return "no turns read";
  const mean = (k: string) => ((sum[k] ?? 0) / n).toFixed(0);
  return (
    `${n} slowest turns, mean ms: total ${mean("total")} = model run ${mean("modelRun")}, workflow task wait ` +
    `${mean("workflowTaskWait")} + run ${mean("workflowTaskRun")}, sticky timeouts ${mean("stickyTimeouts")}, ` +
    `tool wait ${mean("toolWait")} + run ${mean("toolRun")}, model wait own queue ${mean("modelWaitOwn")} / shared ` +
    `${mean("modelWaitShared")}, routed timeouts ${mean("routedTimeouts")} (${sum.routedTimeoutCount ?? 0} in all), ` +
    `other ${mean("other")}`
  );
}
