/** What a finished run looked like, for handles on runs that no worker serves any more. */
import type { Client, WorkflowHandle } from "@temporalio/client";
import { storyFromHistory, storyTranscript } from "./history-transcript.js";
import type { AgentMessage, AgentRunState } from "./types.js";

export interface ClosedRunView {
  transcript: AgentMessage[];
  /** False when the result left messages out: the transcript here is then only what the result kept. */
  complete: boolean;
  state: AgentRunState;
}

export async function closedRunView(client: Client, workflow: WorkflowHandle): Promise<ClosedRunView> {
  const story = storyFromHistory(await workflow.fetchHistory(), client.options.loadedDataConverter.payloadConverter);
  if (!story.input) throw new Error(`Workflow ${workflow.workflowId} has no agent run input in its history`);
  const transcript = storyTranscript(story);
  const { result } = story;
  let status: AgentRunState["status"] = story.status === "completed" ? "completed" : story.status === "cancelled" ? "cancelled" : "failed";
  if (result?.stopReason === "error") status = "failed";
  if (result?.stopReason === "aborted") status = "cancelled";
  return {
    transcript,
    complete: result?.messagesOmitted === undefined && story.input.continued === undefined,
    state: {
      status,
      phase: "done",
      turn: result?.turns ?? story.items.filter((i) => i.kind === "message" && i.message.role === "assistant").length,
      usage: result?.usage ?? story.usage,
      pendingToolCalls: [],
      pendingApprovals: [],
      queuedSteering: 0,
      queuedFollowUps: 0,
      earlierMessages: 0,
      messageCount: transcript.length,
      stopReason: result?.stopReason,
      errorMessage: result?.errorMessage ?? story.failure,
    },
  };
}
