/** What GET /runs answers (src/http/run-list.ts), as the console's page reads it too (src/http/console/web). */

export interface RunRow {
  workflowId: string;
  runId: string;
  /** AgentStatus while the run could keep it; Temporal's status (lower case) when it ended otherwise. */
  status: string;
  executionStatus: string;
  model?: string;
  /** Who the run is for (AgentTenant), when it has a tenant. */
  tenant?: string;
  turns?: number;
  totalTokens?: number;
  costUsd?: number;
  stopReason?: string;
  summary?: string;
  startTime?: string;
  closeTime?: string;
}

export interface RunListPage {
  /** Runs waiting for approval, first page of the unfiltered list only: a person's work comes first. */
  pinned: RunRow[];
  runs: RunRow[];
  nextPageToken?: string;
  /** False when the namespace lacks the agent's search attributes (filtered by Temporal's status only). */
  withAttributes: boolean;
}
