/**
 * Every change to the loop made after runs were recorded, by its patch id
 * (`patched(id)`): running runs take the new path from the next workflow task
 * on, histories recorded before it replay the old one. Add a line here when a
 * change would alter the commands of a recorded run (README, "Changing the loop").
 */
import { patched } from "@temporalio/workflow";

/** The memo (model, tools, outcome) shown in the Temporal UI. */
export const MEMO_PATCH = "jai-memo-v1" as const;
/** The search attributes (AgentStatus, ...; see search-attributes.ts). */
export const SEARCH_ATTRIBUTES_PATCH = "jai-search-attributes-v1" as const;
/** A run that ends with stopReason "error" fails (rather than completes). */
export const FAILED_STATUS_PATCH = "jai-failed-status-v1" as const;
/** Model calls routed to the worker that holds the run's context. */
export const MODEL_ROUTE_PATCH = "jai-model-route-v1" as const;
/** Local activities (fast tools' calls, the setup): runs recorded before them schedule regular activities. */
export const LOCAL_ACTIVITIES_PATCH = "jai-local-activities-v1" as const;

/**
 * One marker for every change above, for runs started since: each patch costs a run a marker and a
 * TemporalChangeVersion upsert in its first workflow task, and with it the run's first search-attribute
 * upserts (model and tools, then status and counters) are one command. Runs recorded before it keep their
 * own markers and replay as they were.
 */
export const BASELINE_PATCH = "jai-baseline-v2";

/** The changes the baseline covers: exactly those made before it. */
type BaselineChange =
  | typeof MEMO_PATCH
  | typeof SEARCH_ATTRIBUTES_PATCH
  | typeof FAILED_STATUS_PATCH
  | typeof MODEL_ROUTE_PATCH
  | typeof LOCAL_ACTIVITIES_PATCH;

/**
 * Whether this run takes the path of `change` from here on: any run that recorded the baseline does; an
 * older run when it recorded that change's own marker. Like `patched`, a running run switches at its next
 * new workflow task.
 * Contract: only for the changes the baseline covers. A later change is a plain `patched(itsId)`: runs
 * recorded with the baseline did not take it.
 */
export function hasChange(change: BaselineChange): boolean {
  return patched(BASELINE_PATCH) || patched(change);
}
