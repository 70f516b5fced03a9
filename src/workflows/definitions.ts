/** Names shared by the workflow, the worker and the client: queries and the event sink. */
import { defineQuery, type Sinks } from "@temporalio/workflow";
import type { AgentEvent, AgentMessage, AgentRunState } from "../types.js";

/** Workflow type name of a run. */
export const AGENT_RUN_WORKFLOW = "agentRun";

/** Current status, turn, usage and pending tool calls. */
export const stateQuery = defineQuery<AgentRunState>("state");

/**
 * The full transcript (a continued transcript's earlier messages included).
 * `offset`/`limit` page through it so one answer stays small on long runs.
 */
export const transcriptQuery = defineQuery<AgentMessage[], [options?: { offset?: number; limit?: number }]>("transcript");

/** Workflow-level events leave the workflow through this sink: never recorded in history, not re-sent on replay. */
export interface AgentSinks extends Sinks {
  agent: { emit(event: AgentEvent): void };
}
