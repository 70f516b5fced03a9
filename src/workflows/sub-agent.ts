/**
 * A sub-agent call as a child `agentRun` workflow. Its id is deterministic,
 * `<parent workflow id>/sub-<turn>-<index>`, so a person can find it (e.g. to
 * approve a tool call inside it) and the Temporal UI lists it under its parent.
 *
 * Depth: the top-level run is depth 0, its children depth 1, and so on; each
 * child's input records its depth (`subAgentDepth`, carried across
 * continue-as-new). A call that would start a child deeper than its tool's
 * `maxDepth` (default 3) starts nothing: it becomes an error result the model
 * sees, and the run goes on. Histories recorded before the bound have no
 * depth in their inputs: they replay as top-level runs, whose calls the bound
 * never refuses below depth 3, so their commands are unchanged.
 *
 * What a child gets of its parent's run features (`childInput`): a parent's
 * policy and floor as its `approvalPolicyFloor` (features/approval-policy.ts),
 * a share of its budget (features/budget.ts).
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  ApplicationFailure,
  ChildWorkflowFailure,
  executeChild,
  isCancellation,
  ParentClosePolicy,
  workflowInfo,
} from "@temporalio/workflow";
import type { ToolCall } from "@jai/ai";
import type { AgentRunResult, SubAgentSpec } from "../shared/contracts.js";
import type { AgentRunWorkflowInput, ExecuteToolOutput, ToolSpec } from "../shared/wire.js";
import { AGENT_RUN_FAILED, AGENT_RUN_WORKFLOW } from "../shared/definitions.js";
import type { RunContext } from "./run-context.js";
import { errorOutput } from "../shared/tool-output.js";
import { childTenantOptions } from "./tenant.js";

const DEFAULT_SUB_AGENT_TURNS = 10;
/** How deep sub-agents nest unless their tool's `maxDepth` says otherwise (the top-level run is depth 0). */
export const DEFAULT_SUB_AGENT_MAX_DEPTH = 3;

/** The tool's depth bound: its `maxDepth` when that is a non-negative integer, else the default. */
export function subAgentMaxDepth(sub: SubAgentSpec): number {
  const n = sub.maxDepth;
  return typeof n === "number" && Number.isInteger(n) && n >= 0 ? n : DEFAULT_SUB_AGENT_MAX_DEPTH;
}

/** The child's workflow id for the call at `index` of the parent's turn `turn`. */
export function subAgentWorkflowId(parentWorkflowId: string, turn: number, index: number): string {
  return `${parentWorkflowId}/sub-${turn}-${index}`;
}

/** The result a child run that ended in error failed with (AGENT_RUN_FAILED carries it); undefined otherwise. */
export function failedChildResult(err: unknown): AgentRunResult | undefined {
  const cause = err instanceof ChildWorkflowFailure ? err.cause : undefined;
  return cause instanceof ApplicationFailure && cause.type === AGENT_RUN_FAILED
    ? (cause.details?.[0] as AgentRunResult | undefined)
    : undefined;
}

function finalText(result: AgentRunResult): string {
  const last = [...result.messages].reverse().find((m) => m.role === "assistant");
  if (!last || last.role !== "assistant") return "";
  return last.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");
}

export async function runSubAgent(
  run: RunContext,
  spec: ToolSpec,
  sub: SubAgentSpec,
  call: ToolCall,
  index: number,
): Promise<ExecuteToolOutput> {
  const parentDepth = run.input.subAgentDepth ?? 0;
  const prompt = (call.arguments as { prompt?: unknown }).prompt;
  if (typeof prompt !== "string" || prompt === "")
    return errorOutput(`Tool ${spec.name}: "prompt" must be a non-empty string`);
  const depth = parentDepth + 1;
  const maxDepth = subAgentMaxDepth(sub);
  if (depth > maxDepth) {
    return errorOutput(
      `Sub-agent ${spec.name} was not started: this run is already at sub-agent depth ${parentDepth} ` +
        `and ${spec.name} allows at most ${maxDepth} (its maxDepth). Do the task without delegating it.`,
    );
  }
  const workflowId = subAgentWorkflowId(workflowInfo().workflowId, run.state.turn, index);
  const input: AgentRunWorkflowInput = {
    model: sub.model,
    prompt,
    tools: sub.tools ?? [],
    maxTurns: sub.maxTurns ?? DEFAULT_SUB_AGENT_TURNS,
    ...(sub.systemPrompt !== undefined ? { systemPrompt: sub.systemPrompt } : {}),
    ...(sub.toolExecution !== undefined ? { toolExecution: sub.toolExecution } : {}),
    // Typed results: the child validates its own answer; its output is this call's result.
    ...(sub.output !== undefined ? { output: sub.output } : {}),
    ...(sub.outputRetries !== undefined ? { outputRetries: sub.outputRetries } : {}),
    subAgentDepth: depth,
  };
  // What the run's features pass on: the parent's floor and policy, a share of what is left of its budget.
  const child = { call, workflowId };
  for (const f of run.features) Object.assign(input, f.childInput?.(run, child));
  try {
    const result = (await executeChild(AGENT_RUN_WORKFLOW, {
      workflowId,
      args: [input],
      ...(sub.taskQueue !== undefined ? { taskQueue: sub.taskQueue } : {}),
      // The parent's tenant (its search attribute; its fairness key the server passes on itself).
      ...childTenantOptions(),
      // The parent waits for its children to finish cancelling, so no child outlives a cancelled parent;
      // a parent that is terminated or times out still asks its children to cancel.
      cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
    })) as AgentRunResult;
    run.state.conversation.addUsage(result.usage);
    for (const f of run.features) f.childEnded?.(run, child, { result });
    // A child that spent its budget did not finish its task: the model sees it as an error.
    const failed = result.stopReason === "error" || result.stopReason === "aborted" || result.stopReason === "budget";
    const typed = result.output !== undefined;
    const text =
      (typed ? JSON.stringify(result.output) : finalText(result)) ||
      (failed
        ? `Sub-agent ${spec.name} ended: ${result.stopReason}${result.errorMessage ? ` (${result.errorMessage})` : ""}`
        : "");
    return {
      result: {
        content: [{ type: "text", text }],
        details: {
          subAgent: {
            workflowId,
            stopReason: result.stopReason,
            turns: result.turns,
            usage: result.usage,
            ...(typed ? { output: result.output } : {}),
          },
        },
      },
      isError: failed,
    };
  } catch (err) {
    for (const f of run.features) f.childEnded?.(run, child, { error: err });
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
