/** The scale bench's measure of a failover: how long a SIGKILL left a run standing still (issue 17). */
import type proto from "@temporalio/proto";
import { eventMs } from "../src/history-story.js";

/**
 * How long a run stood still because of the kill, from its history: from the kill (or, if an activity scheduled
 * before it finished after it in its first attempt, from that end: the run was busy on a survivor until then) to the
 * start of the first activity the run scheduled after that. Unlike its turn across the kill, it leaves out the work
 * the kill threw away (a model call streaming on the killed worker) and the redo of a model call; a tool call's
 * retry is inside it. What the failover itself cost. Undefined when the run scheduled nothing after the kill.
 */
export function stallMs(events: proto.temporal.api.history.v1.IHistoryEvent[], killedAt: number): number | undefined {
  let from = killedAt;
  const attempts = new Map<number, number>();
  let scheduled: number | undefined;
  for (const e of events) {
    const at = eventMs(e);
    const id = Number(e.eventId);
    if (e.activityTaskStartedEventAttributes) attempts.set(id, e.activityTaskStartedEventAttributes.attempt ?? 1);
    if (at <= killedAt) continue;
    const done = e.activityTaskCompletedEventAttributes;
    if (done && scheduled === undefined && attempts.get(Number(done.startedEventId)) === 1) from = Math.max(from, at);
    if (e.activityTaskScheduledEventAttributes && scheduled === undefined) scheduled = id;
    const started = e.activityTaskStartedEventAttributes;
    if (started && scheduled !== undefined && Number(started.scheduledEventId) === scheduled) return at - from;
  }
  return undefined;
}
