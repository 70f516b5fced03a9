/**
 * Every change to the loop made after runs were recorded, by its patch id
 * (`patched(id)`): running runs take the new path from the next workflow task
 * on, histories recorded before it replay the old one. Add a line here when a
 * change would alter the commands of a recorded run (README, "Changing the loop").
 *
 * Contract: a new change's `patched(id)` is asked at the start of `runAgent`, with `startBaseline`'s, or where
 * the run decides after a regular activity, timer or update, never in code that a local activity's result
 * resumes (the setup, a fast tool's call): see baseline v4 for what that broke.
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
 * - v4: v3, and every change made after v3 (`LaterChange`, at the end of this file). Those were asked where they decide, some right after a
 *   local activity: a query that came while it ran made the worker complete the task with the activity's marker
 *   before the workflow saw its result, the patch's marker went into the next task, and the history no longer
 *   replayed (the `patched` call, replayed in the earlier task, found no marker there). A v4 run asks one patch,
 *   first, and no other.
 */
export const BASELINE_PATCH = "jai-baseline-v4";
/** The baseline before: runs recorded with it asked each later change's own patch where it decided. */
export const BASELINE_V3_PATCH = "jai-baseline-v3";
/** The baseline before that: runs recorded with it write the memo next to the search attributes. */
export const BASELINE_V2_PATCH = "jai-baseline-v2";

/** The changes baselines v2 and v3 cover: exactly those made before them. */
type BaselineChange =
  | typeof MEMO_PATCH
  | typeof SEARCH_ATTRIBUTES_PATCH
  | typeof FAILED_STATUS_PATCH
  | typeof MODEL_ROUTE_PATCH
  | typeof LOCAL_ACTIVITIES_PATCH;

/**
 * After baseline v3 (covered by v4): a run refused before its loop (invalid input, or a setup that refuses it) asks a local activity whether the namespace has the agent search attributes, then upserts
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
 * After baseline v3 (covered by v4): typed results (run input `output`, docs/typed-results.md). Asked
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

/**
 * After baseline v4, so asked with `patched()` by every run, v4 ones too (issue #53): a run's own schemas are
 * refused at start when they refer outside themselves or hold a pattern RE2 cannot run (shared/run-schema-checks.ts). Asked
 * only when the input has `output` or `clientTools`: runs recorded before accepted any such schema, and replay
 * that way; other runs record no marker.
 */
export const RUN_SCHEMAS_PATCH = "jai-run-schemas-v1" as const;

/**
 * After baseline v4, so asked with `patched()` (issue #53): a run's `approvalPolicyFloor` (a named agent's policy,
 * a parent's for its sub-agents) is judged beside its own policy, and the stricter verdict wins. Asked at the
 * start of `runAgent`, only when the input has a floor: runs recorded before refused the field as unknown, and
 * replay that way; other runs record no marker. A parent passing its floor and policy on to a sub-agent changes
 * only the child's input (no command added, removed or reordered), so it asks nothing.
 */
export const POLICY_FLOOR_PATCH = "jai-policy-floor-v1" as const;

/** The changes made after baseline v3, which v4 covers. */
type LaterChange =
  | typeof UNKNOWN_FIELDS_PATCH
  | typeof SETUP_ANY_WORKER_PATCH
  | typeof REFUSED_STATUS_PATCH
  | typeof APPROVAL_POLICY_PATCH
  | typeof CLIENT_TOOLS_PATCH
  | typeof CLIENT_WAIT_STATUS_PATCH
  | typeof TYPED_OUTPUT_PATCH
  | typeof BUDGET_PATCH
  | typeof MODEL_CHAIN_PATCH;

const LATER_CHANGES: ReadonlySet<string> = new Set<LaterChange>([
  UNKNOWN_FIELDS_PATCH,
  SETUP_ANY_WORKER_PATCH,
  REFUSED_STATUS_PATCH,
  APPROVAL_POLICY_PATCH,
  CLIENT_TOOLS_PATCH,
  CLIENT_WAIT_STATUS_PATCH,
  TYPED_OUTPUT_PATCH,
  BUDGET_PATCH,
  MODEL_CHAIN_PATCH,
]);

/**
 * Whether this run started with baseline v4: asked once, by `startBaseline`, in the run's first activation
 * (module state is the run's own: each workflow has its own globals). Never asked again, so a run recorded before
 * v4 never records it later, at a point that may follow a local activity.
 */
let startedWithV4: boolean | undefined;

/**
 * Asks baseline v4, before the run's first command.
 * Contract: the first thing a run does, before any other patch, activity or upsert.
 */
export function startBaseline(): void {
  startedWithV4 = patched(BASELINE_PATCH);
}

/**
 * The newest baseline this run recorded: 4, 3, 2, or 0 for a run recorded before them all. A run takes v4 only
 * from its start; like `patched`, a running run recorded before v3 takes v3 at its next new workflow task.
 */
export function baseline(): 0 | 2 | 3 | 4 {
  if (hasBaselineV4()) return 4;
  return patched(BASELINE_V3_PATCH) ? 3 : patched(BASELINE_V2_PATCH) ? 2 : 0;
}
/** Whether the run started with baseline v4 (`startBaseline` asked it). */
function hasBaselineV4(): boolean {
  if (startedWithV4 === undefined) throw new Error("baseline asked before startBaseline()");
  return startedWithV4;
}

/**
 * Whether this run takes the path of `change` from here on: a run with baseline v4 does, without a marker; a
 * run recorded with v2 or v3 does for the changes they cover; otherwise when `patched(change)` says so (the change's
 * own marker, asked where the change decides, as runs recorded before v4 asked it). A later change does not ask
 * v3 first: runs recorded with v3 asked the later change's patch before their baseline's, and replay in that order.
 */
export function hasChange(change: BaselineChange | LaterChange): boolean {
  if (hasBaselineV4()) return true;
  if (LATER_CHANGES.has(change)) return patched(change);
  return baseline() >= 2 || patched(change);
}
