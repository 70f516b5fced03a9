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
 * A new run whose input has a field no run input has (e.g. "maxTurn") fails as InvalidRunInput; runs recorded
 * before it ran with such fields ignored. Asked only when the input has one: other runs record no marker.
 */
export const UNKNOWN_FIELDS_PATCH = "jai-unknown-input-fields-v1" as const;
/**
 * A local setup that found the worker lacking the run's model (ModelNotServed) runs again as a regular
 * activity, which any worker of the queue may take. Asked only after such a failure.
 */
export const SETUP_ANY_WORKER_PATCH = "jai-setup-any-worker-v1" as const;

/**
 * One marker for every change above, for runs started since: each patch costs a run a marker and a
 * TemporalChangeVersion upsert in its first workflow task. Runs recorded before a baseline keep the
 * markers they have and replay as they were.
 *
 * - v2: the changes above; with it the run's first search-attribute upserts (model and tools, then status
 *   and counters) are one command.
 * - v3: v2, and a run whose namespace has the agent search attributes writes no memo: the model, tools
 *   and outcome the memo repeated are in those attributes, and each memo upsert cost the run an event
 *   and a visibility write at its start and at its end.
 */
export const BASELINE_PATCH = "jai-baseline-v3";
/** The baseline before: runs recorded with it write the memo next to the search attributes. */
export const BASELINE_V2_PATCH = "jai-baseline-v2";

/** The changes the baselines cover: exactly those made before them. */
type BaselineChange =
  | typeof MEMO_PATCH
  | typeof SEARCH_ATTRIBUTES_PATCH
  | typeof FAILED_STATUS_PATCH
  | typeof MODEL_ROUTE_PATCH
  | typeof LOCAL_ACTIVITIES_PATCH;

/**
 * The newest baseline this run recorded: 3, 2, or 0 for a run recorded before both. Like `patched`, a
 * running run takes the newest at its next new workflow task.
 */
export function baseline(): 0 | 2 | 3 {
  return patched(BASELINE_PATCH) ? 3 : patched(BASELINE_V2_PATCH) ? 2 : 0;
}

/**
 * Whether this run takes the path of `change` from here on: any run that recorded a baseline does; an
 * older run when it recorded that change's own marker.
 * Contract: only for the changes the baselines cover. A later change is a plain `patched(itsId)`: runs
 * recorded with a baseline did not take it.
 */
export function hasChange(change: BaselineChange): boolean {
  return baseline() >= 2 || patched(change);
}

/**
 * After the baselines (a plain `patched`): a run refused before its loop (invalid input, or a setup that
 * refuses it) asks a local activity whether the namespace has the agent search attributes, then upserts
 * AgentStatus "failed". Asked only when refused: other runs record no marker.
 */
export const REFUSED_STATUS_PATCH = "jai-refused-status-v1" as const;
/**
 * Approval policies (rules that allow, ask or deny, and tools approved with `remember`). Asked only for a call of
 * a run that has a policy or a remembered tool, where the decision is made: other runs record no marker, and a
 * run recorded before it (by code that ignored such a field) replays with each tool's own `requiresApproval`.
 */
export const APPROVAL_POLICY_PATCH = "jai-approval-policy-v1" as const;
/**
 * Client-side tools (`clientTools` in the run's input): offered to the model and answered by a client. Asked only
 * by a run whose input declares some, before its first model call: runs recorded before it offered none.
 */
export const CLIENT_TOOLS_PATCH = "jai-client-tools-v1" as const;
/**
 * The status "waiting_for_client" (state and AgentStatus) while a client tool call waits and nothing else of its
 * batch runs. Asked only when a client tool call begins to wait: runs recorded before it stayed "running" then
 * (no AgentStatus upsert), and replay that way; runs without client tools never ask.
 */
export const CLIENT_WAIT_STATUS_PATCH = "jai-client-wait-status-v1" as const;

/**
 * After the baselines (a plain `patched`): typed results (run input `output`, docs/typed-results.md). Asked
 * only when the input has `output` or `outputRetries`: runs recorded before ignored those fields (or refused
 * them as unknown), and replay that way; other runs record no marker.
 */
export const TYPED_OUTPUT_PATCH = "jai-typed-output-v1" as const;

/**
 * Budgets (issue #42): a run input's `budget` is checked and enforced. Asked only when the input has one: runs
 * recorded before refused the field as unknown (or, before UNKNOWN_FIELDS_PATCH, ignored it), and replay that way.
 */
export const BUDGET_PATCH = "jai-budget-v1" as const;

/**
 * Model fallback chains (issue #42): `model` as a list. Asked only when it is one: runs recorded before refused
 * such an input, and replay that way.
 */
export const MODEL_CHAIN_PATCH = "jai-model-chain-v1" as const;
