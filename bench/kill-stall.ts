/** The measure of the kill-stall and scale benches: how long a SIGKILL left a run standing still (issue 17). */
import type proto from "@temporalio/proto";
import { eventMs } from "../src/client/history-story.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;

/**
 * How long a run stood still because of the kill, from its history: the time from the kill until the run's work
 * runs again (the start of the earliest activity it scheduled after the kill, or its end if it scheduled none),
 * less the time activities of the run were running on survivors then (attempts that completed or failed: a run
 * busy on a survivor was not standing still, a retried attempt of a lost call included). So it leaves out the
 * work the kill threw away (a model call streaming on the killed worker) and its redo, and keeps every wait:
 * timeouts, retry backoff, queues, replays. What the recovery itself cost. Undefined when the run neither
 * scheduled an activity after the kill nor ended.
 *
 * `events` is one run's history, or (a run that continued as new across the kill) the histories of the chain's
 * runs from the one open at the kill on, oldest first: a run that continues as new before its next activity
 * stands still until the next run's first one starts.
 */
export function stallMs(events: Event[] | Event[][], killedAt: number): number | undefined {
  const runs = events.length > 0 && Array.isArray(events[0]) ? (events as Event[][]) : [events as Event[]];
  const running: [number, number][] = [];
  let end: number | undefined;
  for (const run of runs) {
    // Event ids are per run: each run's maps start empty.
    const startedAt = new Map<number, number>();
    const scheduledAfter = new Set<number>();
    for (const e of run) {
      const at = eventMs(e);
      const id = Number(e.eventId);
      const started = e.activityTaskStartedEventAttributes;
      if (started) startedAt.set(id, at);
      if (at <= killedAt) continue;
      if (e.activityTaskScheduledEventAttributes) scheduledAfter.add(id);
      const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
      const from = ended ? startedAt.get(Number(ended.startedEventId)) : undefined;
      if (from !== undefined) running.push([Math.max(from, killedAt), at]);
      // The Started event of an attempt is written when the attempt ends, with the time it started.
      if (started && scheduledAfter.has(Number(started.scheduledEventId))) end = Math.min(end ?? at, at);
      if (end === undefined && e.workflowExecutionCompletedEventAttributes) end = at;
    }
    if (end !== undefined) break;
  }
  if (end === undefined) return undefined;
  return end - killedAt - busyMs(running, end);
}

/** The time within [kill, `until`] covered by the intervals (activities of one run may run in parallel). */
function busyMs(intervals: [number, number][], until: number): number {
  let busy = 0;
  let reached = -Infinity;
  for (const [from, to] of [...intervals].sort((a, b) => a[0] - b[0])) {
    const start = Math.max(from, reached);
    const stop = Math.min(to, until);
    if (stop > start) busy += stop - start;
    reached = Math.max(reached, to);
  }
  return busy;
}
