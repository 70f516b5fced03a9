/**
 * Every change to the loop made after runs were recorded, by its patch id
 * (`patched(id)`): running runs take the new path from the next workflow task
 * on, histories recorded before it replay the old one. Add a line here when a
 * change would alter the commands of a recorded run (README, "Changing the loop").
 */

/** The memo (model, tools, outcome) shown in the Temporal UI. */
export const MEMO_PATCH = "jai-memo-v1";
/** The search attributes (AgentStatus, ...; see search-attributes.ts). */
export const SEARCH_ATTRIBUTES_PATCH = "jai-search-attributes-v1";
/** A run that ends with stopReason "error" fails (rather than completes). */
export const FAILED_STATUS_PATCH = "jai-failed-status-v1";
/** Model calls routed to the worker that holds the run's context. */
export const MODEL_ROUTE_PATCH = "jai-model-route-v1";
/** Local activities (fast tools' calls, the setup): runs recorded before them schedule regular activities. */
export const LOCAL_ACTIVITIES_PATCH = "jai-local-activities-v1";
