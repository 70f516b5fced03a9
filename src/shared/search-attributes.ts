/**
 * The search attributes a run keeps up to date, so operators can find runs in
 * the Temporal UI and CLI ("all runs waiting for approval", "failed runs of
 * model X", "runs over 1M tokens"). The dev server registers them at start
 * (src/node/dev-server.ts), the compose setup with `temporal operator
 * search-attribute create` (deploy/temporal/create-namespace.sh). A namespace
 * without them still serves runs: the setup activity records whether they
 * exist, and the workflow skips the upserts when they do not.
 */
import { defineSearchAttributeKey, type SearchAttributeType } from "@temporalio/common";

/** running / waiting_for_approval / waiting_for_client / waiting_for_prompt / completed / failed / cancelled (AgentRunState's status). */
export const AgentStatus = defineSearchAttributeKey("AgentStatus", "KEYWORD");
/** The last prompt's stopReason, once it has one. */
export const AgentStopReason = defineSearchAttributeKey("AgentStopReason", "KEYWORD");
/** "provider/modelId". */
export const AgentModel = defineSearchAttributeKey("AgentModel", "KEYWORD");
/** Names of the tools the run may call. */
export const AgentTools = defineSearchAttributeKey("AgentTools", "KEYWORD_LIST");
/** Model calls so far (the whole continue-as-new chain). */
export const AgentTurns = defineSearchAttributeKey("AgentTurns", "INT");
/** Tokens so far (input + output + cache). */
export const AgentTotalTokens = defineSearchAttributeKey("AgentTotalTokens", "INT");
/** Cost so far in US dollars, as the model's price table says. */
export const AgentCostUsd = defineSearchAttributeKey("AgentCostUsd", "DOUBLE");

/**
 * The first line of the prompt, as the run's static summary (which only the
 * starter can set: a run started from the Temporal CLI without
 * `--static-summary` has none, this it always has). A column in the UI's list;
 * Text, so words of it can be searched.
 */
export const AgentSummary = defineSearchAttributeKey("AgentSummary", "TEXT");

/**
 * Who the run is for (`startAgentRun({ tenant })`, docs/tenants.md): set at start by the client, never upserted
 * by the run; a sub-agent's child carries its parent's. Also the run's Temporal fairness key.
 */
export const AgentTenant = defineSearchAttributeKey("AgentTenant", "KEYWORD");

/** Every agent search attribute, in registration order. */
export const AGENT_SEARCH_ATTRIBUTES = [
  AgentStatus,
  AgentStopReason,
  AgentModel,
  AgentTools,
  AgentTurns,
  AgentTotalTokens,
  AgentCostUsd,
  AgentSummary,
  AgentTenant,
] as const;

/**
 * The attributes the run upserts itself: the setup activity looks for these. AgentTenant is only ever set by a
 * starter, so a namespace registered before it existed keeps its other attributes up to date.
 */
export const UPSERTED_SEARCH_ATTRIBUTES = AGENT_SEARCH_ATTRIBUTES.filter((k) => k !== AgentTenant);

const CLI_TYPES: Record<SearchAttributeType, string> = {
  TEXT: "Text",
  KEYWORD: "Keyword",
  INT: "Int",
  DOUBLE: "Double",
  BOOL: "Bool",
  DATETIME: "Datetime",
  KEYWORD_LIST: "KeywordList",
};

/** `Name=Type` as the Temporal CLI's `--search-attribute` flag and `search-attribute create --type` spell them. */
export function cliSearchAttributeSpecs(): string[] {
  return AGENT_SEARCH_ATTRIBUTES.map((k) => `${k.name}=${CLI_TYPES[k.type]}`);
}

/** The saved-view query of runs waiting for a person (the README and the screenshot in docs/ use it). */
export const WAITING_FOR_APPROVAL_QUERY = `AgentStatus = "waiting_for_approval"`;
