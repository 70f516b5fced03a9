/** Delivers activity-level events to the worker's sink without letting a faulty sink break the activity. */
import { Context, log } from "@temporalio/activity";
import type { AgentEvent, AgentEventSink } from "../../shared/contracts.js";
import { activityEventId } from "../../node/event-identity.js";
import { currentRun } from "./heartbeat.js";

export type Emit = (event: AgentEvent) => void;

/** One emitter per activity attempt: its events are numbered in the order it emits them (their `eventId`). */
export function activityEmitter(onEvent: AgentEventSink | undefined): Emit {
  if (!onEvent) return () => {};
  const run = currentRun();
  const { activityId, attempt } = Context.current().info;
  let emitted = 0;
  return (event) => {
    try {
      const pending = onEvent(event, { ...run, eventId: activityEventId(run.runId, activityId, attempt, emitted++) });
      if (pending && typeof pending.catch === "function")
        pending.catch((err) => log.warn("onEvent sink failed", { error: String(err) }));
    } catch (err) {
      log.warn("onEvent sink threw", { error: String(err) });
    }
  };
}
