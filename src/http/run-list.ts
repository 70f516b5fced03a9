/**
 * The console's list of runs: Temporal visibility, read with the search attributes the loop writes
 * (src/shared/search-attributes.ts), one row per continue-as-new chain (its earlier runs closed as
 * ContinuedAsNew and are left out, so the row is the chain's newest run). Listed with the raw service call:
 * search attributes are never encrypted, so no codec work per row and a page of 50 answers in milliseconds.
 */
import type { Client } from "@temporalio/client";
import type { TypedSearchAttributes } from "@temporalio/common";
import { decodeTypedSearchAttributes } from "@temporalio/common/lib/converter/payload-search-attributes.js";
import { optionalTsToDate } from "@temporalio/common/lib/time.js";
import proto from "@temporalio/proto";
import { AGENT_RUN_WORKFLOW } from "../shared/definitions.js";
import {
  AgentCostUsd,
  AgentModel,
  AgentStatus,
  AgentStopReason,
  AgentSummary,
  AgentTotalTokens,
  AgentTurns,
  AgentTenant,
} from "../shared/search-attributes.js";
import type { RunListPage, RunRow } from "../shared/run-rows.js";

export interface RunListQuery {
  /** "" (all, runs waiting for approval pinned on top) | approval | waiting | running | failed | completed | cancelled */
  status?: string;
  model?: string;
  /** Runs of this tenant only (AgentTenant). */
  tenant?: string;
  /** Words of the summary (AgentSummary is Text: a full-text match). */
  text?: string;
  pageSize?: number;
  /** From the previous answer's nextPageToken. */
  pageToken?: string;
}

const EXECUTION_STATUS = proto.temporal.api.enums.v1.WorkflowExecutionStatus;
type RawExecution = proto.temporal.api.workflow.v1.IWorkflowExecutionInfo;

const OPEN = `ExecutionStatus = "Running"`;
/** Each filter by the agent's status, and by Temporal's alone for a namespace without the attributes. */
const FILTERS: Record<string, { agent: string; execution: string }> = {
  approval: { agent: `AgentStatus = "waiting_for_approval" AND ${OPEN}`, execution: OPEN },
  waiting: {
    agent: `AgentStatus IN ("waiting_for_approval", "waiting_for_client", "waiting_for_prompt") AND ${OPEN}`,
    execution: OPEN,
  },
  running: { agent: OPEN, execution: OPEN },
  // A run Temporal ended (terminated, timed out) before it could say so is failed too.
  failed: {
    agent: `(AgentStatus = "failed" OR ExecutionStatus IN ("Failed", "Terminated", "TimedOut"))`,
    execution: `ExecutionStatus IN ("Failed", "Terminated", "TimedOut")`,
  },
  completed: { agent: `AgentStatus = "completed"`, execution: `ExecutionStatus = "Completed"` },
  cancelled: { agent: `ExecutionStatus = "Canceled"`, execution: `ExecutionStatus = "Canceled"` },
};
export const RUN_FILTERS = Object.keys(FILTERS);
/**
 * The unfiltered list below the pinned runs, on every page: all but the runs pinned above it, so a run waiting
 * for approval shows once, on top, and the list below is never a page of runs already pinned.
 */
const UNPINNED = `(AgentStatus != "waiting_for_approval" OR AgentStatus IS NULL OR ${OPEN.replace("=", "!=")})`;

/** Visibility string literal: JSON's escaping is what the SQL parser reads ("…" with \" and \\). */
const literal = (s: string) => JSON.stringify(s);

export function runListQuery(options: RunListQuery, withAttributes: boolean, status = options.status): string {
  // One row per chain: the runs a chain continued from closed as ContinuedAsNew.
  const parts = [`WorkflowType = ${literal(AGENT_RUN_WORKFLOW)}`, `ExecutionStatus != "ContinuedAsNew"`];
  if (status) {
    const f = FILTERS[status];
    if (!f) throw new RangeError(`unknown status filter "${status}" (one of ${RUN_FILTERS.join(", ")})`);
    parts.push(withAttributes ? f.agent : f.execution);
  } else if (withAttributes) parts.push(UNPINNED);
  if (withAttributes && options.model) parts.push(`AgentModel = ${literal(options.model)}`);
  if (withAttributes && options.tenant) parts.push(`AgentTenant = ${literal(options.tenant)}`);
  // Words only, lowercased: the store reads a Text match as a full-text expression, where quotes, "*", "-" and
  // capitalised AND/OR/NOT/NEAR are operators (a lone quote is a syntax error that named the store's SQL).
  const words = options.text?.match(/[\p{L}\p{N}_]+/gu)?.map((w) => w.toLowerCase());
  if (withAttributes && words?.length) parts.push(`AgentSummary = ${literal(words.join(" "))}`);
  return parts.join(" AND ");
}

export function runRow(raw: RawExecution): RunRow {
  const attrs: TypedSearchAttributes = decodeTypedSearchAttributes(raw.searchAttributes?.indexedFields);
  const executionStatus = (EXECUTION_STATUS[raw.status ?? 0] ?? "unknown")
    .replace(/^WORKFLOW_EXECUTION_STATUS_/, "")
    .toLowerCase();
  const agentStatus = attrs.get(AgentStatus);
  // A run Temporal ended (terminated, timed out) never wrote its last status: "running" would be a lie.
  const open = executionStatus === "running";
  const status = agentStatus && (open || !/^(running|waiting_)/.test(agentStatus)) ? agentStatus : executionStatus;
  const row: RunRow = {
    workflowId: raw.execution?.workflowId ?? "",
    runId: raw.execution?.runId ?? "",
    status,
    executionStatus,
    model: attrs.get(AgentModel),
    tenant: attrs.get(AgentTenant),
    turns: attrs.get(AgentTurns),
    totalTokens: attrs.get(AgentTotalTokens),
    costUsd: attrs.get(AgentCostUsd),
    stopReason: attrs.get(AgentStopReason),
    summary: attrs.get(AgentSummary),
    startTime: optionalTsToDate(raw.startTime)?.toISOString(),
    closeTime: optionalTsToDate(raw.closeTime)?.toISOString(),
  };
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== undefined)) as RunRow;
}

/** One page of the list; the unfiltered first page pins the runs waiting for approval above it. */
export async function listRunPage(client: Client, options: RunListQuery): Promise<RunListPage> {
  const pageSize = Math.max(1, Math.min(options.pageSize ?? 50, 200));
  const page = async (query: string, size: number, token?: string) => {
    const answer = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query,
      pageSize: size,
      nextPageToken: token ? Buffer.from(token, "base64url") : undefined,
    });
    return {
      rows: (answer.executions ?? []).map(runRow),
      next: answer.nextPageToken?.length ? Buffer.from(answer.nextPageToken).toString("base64url") : undefined,
    };
  };
  const read = async (withAttributes: boolean): Promise<RunListPage> => {
    const pin = !options.status && !options.pageToken && withAttributes;
    const [pinned, rest] = await Promise.all([
      pin ? page(runListQuery(options, true, "approval"), 100) : Promise.resolve({ rows: [] as RunRow[] }),
      page(runListQuery(options, withAttributes), pageSize, options.pageToken),
    ]);
    // The list below leaves the pinned runs out (UNPINNED); one that stopped waiting between the two reads is not
    // shown twice either.
    const shown = new Set(pinned.rows.map((r) => r.workflowId));
    const runs = rest.rows.filter((r) => !shown.has(r.workflowId));
    return { pinned: pinned.rows, runs, nextPageToken: rest.next, withAttributes };
  };
  try {
    return await read(true);
  } catch (err) {
    // A namespace without the agent's search attributes refuses a query naming them: Temporal's status only.
    if (!/Agent(Status|Model|Summary)/.test((err as Error).message)) throw err;
    return await read(false);
  }
}
