/**
 * A sub-agent call as a child `agentRun` workflow. Its id is deterministic,
 * `<parent workflow id>/sub-<turn>-<index>`, so a person can find it (e.g. to
 * approve a tool call inside it) and the Temporal UI lists it under its parent.
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  workflowInfo,
} from "@temporalio/workflow";
import type { ToolCall } from "@jai/ai";
import type { AgentRunInput, AgentRunResult, ExecuteToolOutput, SubAgentSpec, ToolSpec } from "../types.js";
import { AGENT_RUN_WORKFLOW } from "./definitions.js";
import type { RunState } from "./run-state.js";
import { errorOutput } from "./tool-output.js";
import { addUsage } from "../common/usage.js";

const DEFAULT_SUB_AGENT_TURNS = 10;

/** The child's workflow id for the call at `index` of the parent's turn `turn`. */
export function subAgentWorkflowId(parentWorkflowId: string, turn: number, index: number): string {
  return `${parentWorkflowId}/sub-${turn}-${index}`;
}

function finalText(result: AgentRunResult): string {
  const last = [...result.messages].reverse().find((m) => m.role === "assistant");
  if (!last || last.role !== "assistant") return "";
  return last.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");
}

export async function runSubAgent(
  spec: ToolSpec,
  sub: SubAgentSpec,
  call: ToolCall,
  run: RunState,
  index: number,
): Promise<ExecuteToolOutput> {
  const prompt = (call.arguments as { prompt?: unknown }).prompt;
  if (typeof prompt !== "string" || prompt === "")
    return errorOutput(`Tool ${spec.name}: "prompt" must be a non-empty string`);
  const workflowId = subAgentWorkflowId(workflowInfo().workflowId, run.turn, index);
  const input: AgentRunInput = {
    model: sub.model,
    prompt,
    tools: sub.tools ?? [],
    maxTurns: sub.maxTurns ?? DEFAULT_SUB_AGENT_TURNS,
    ...(sub.systemPrompt !== undefined ? { systemPrompt: sub.systemPrompt } : {}),
    ...(sub.toolExecution !== undefined ? { toolExecution: sub.toolExecution } : {}),
  };
  try {
    const result = (await executeChild(AGENT_RUN_WORKFLOW, {
      workflowId,
      args: [input],
      ...(sub.taskQueue !== undefined ? { taskQueue: sub.taskQueue } : {}),
      // The parent waits for its children to finish cancelling, so no child outlives a cancelled parent;
      // a parent that is terminated or times out still asks its children to cancel.
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    })) as AgentRunResult;
    run.usage = addUsage(run.usage, result.usage);
    const failed = result.stopReason === "error" || result.stopReason === "aborted";
    const text =
      finalText(result) ||
      (failed
        ? `Sub-agent ${spec.name} ended: ${result.stopReason}${result.errorMessage ? ` (${result.errorMessage})` : ""}`
        : "");
    return {
      result: {
        content: [{ type: "text", text }],
        details: { subAgent: { workflowId, stopReason: result.stopReason, turns: result.turns, usage: result.usage } },
      },
      isError: failed,
    };
  } catch (err) {
    if (isCancellation(err) || CancellationScope.current().consideredCancelled) throw err;
    const why =
      err instanceof ChildWorkflowFailure
        ? (err.cause?.message ?? err.message)
        : err instanceof Error
          ? err.message
          : String(err);
    return errorOutput(`Sub-agent ${spec.name} (${workflowId}) failed: ${why}`);
  }
}
