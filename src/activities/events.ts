/** Delivers activity-level events to the worker's sink without letting a faulty sink break the activity. */
import { log } from "@temporalio/activity";
import type { AgentEvent, AgentEventSink } from "../types.js";
import { currentRun } from "./heartbeat.js";

export type Emit = (event: AgentEvent) => void;

export function activityEmitter(onEvent: AgentEventSink | undefined): Emit {
  if (!onEvent) return () => {};
  const run = currentRun();
  return (event) => {
    try {
      const pending = onEvent(event, run);
      if (pending && typeof pending.catch === "function")
        pending.catch((err) => log.warn("onEvent sink failed", { error: String(err) }));
    } catch (err) {
      log.warn("onEvent sink threw", { error: String(err) });
    }
  };
}
