/**
 * What a finished run looked like, read from its Temporal history alone: the
 * input of the first event and the result of the last. No worker is needed.
 */
import type { Client, WorkflowHandle } from "@temporalio/client";
import type { Payload } from "@temporalio/common";
import type { AgentMessage, AgentRunInput, AgentRunResult, AgentRunState } from "./types.js";
import { emptyUsage } from "./workflows/usage.js";

export interface ClosedRunView {
  input: AgentRunInput;
  result?: AgentRunResult;
  transcript: AgentMessage[];
  state: AgentRunState;
}

const STATUS_BY_CLOSE: Record<string, AgentRunState["status"]> = {
  workflowExecutionCompletedEventAttributes: "completed",
  workflowExecutionFailedEventAttributes: "failed",
  workflowExecutionTimedOutEventAttributes: "failed",
  workflowExecutionTerminatedEventAttributes: "failed",
  workflowExecutionCanceledEventAttributes: "cancelled",
};

export async function closedRunView(client: Client, workflow: WorkflowHandle): Promise<ClosedRunView> {
  const history = await workflow.fetchHistory();
  const events = history.events ?? [];
  const converter = client.options.loadedDataConverter.payloadConverter;
  const decode = <T>(payload: Payload | null | undefined): T | undefined => (payload ? converter.fromPayload<T>(payload) : undefined);
  const input = decode<AgentRunInput>(events[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]);
  if (!input) throw new Error(`Workflow ${workflow.workflowId} has no agent run input in its history`);
  const last = events[events.length - 1];
  const result = decode<AgentRunResult>(last?.workflowExecutionCompletedEventAttributes?.result?.payloads?.[0]);
  const closeKey = Object.keys(STATUS_BY_CLOSE).find((key) => (last as Record<string, unknown> | undefined)?.[key]);
  const earlier = Array.isArray(input.prompt) ? input.prompt : [];
  const transcript = [...earlier, ...(result?.messages ?? [])];
  let status = closeKey ? STATUS_BY_CLOSE[closeKey] : "failed";
  if (result?.stopReason === "error") status = "failed";
  if (result?.stopReason === "aborted") status = "cancelled";
  const failure = last?.workflowExecutionFailedEventAttributes?.failure?.message ?? undefined;
  return {
    input,
    result,
    transcript,
    state: {
      status,
      phase: "done",
      turn: result?.turns ?? 0,
      usage: result?.usage ?? emptyUsage(),
      pendingToolCalls: [],
      pendingApprovals: [],
      queuedSteering: 0,
      queuedFollowUps: 0,
      messageCount: transcript.length,
      stopReason: result?.stopReason,
      errorMessage: result?.errorMessage ?? failure,
    },
  };
}
