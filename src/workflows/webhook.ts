/**
 * The completion webhook: after a run ends, however it ends, one activity
 * delivers its outcome. Only runs whose input has a `webhook` schedule it, so
 * histories recorded before it existed replay unchanged.
 */
import {
  CancellationScope,
  ApplicationFailure,
  ContinueAsNew,
  isCancellation,
  log,
  TemporalFailure,
  workflowInfo,
  type ActivityOptions,
} from "@temporalio/workflow";
import { deliverRunWebhook } from "./activity-proxies.js";
import type { AgentRunInput, AgentRunResult } from "../shared/contracts.js";
import type { RunOutcome } from "../worker/webhooks/deliver.js";
import { checkWebhookField } from "../shared/webhook-field.js";
import { emptyUsage } from "../shared/usage.js";
import { AGENT_RUN_FAILED } from "../shared/definitions.js";

function finalText(result: AgentRunResult): string {
  const last = [...result.messages].reverse().find((m) => m.role === "assistant");
  return last?.role === "assistant" ? last.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("") : "";
}

/** Runs `body` (the agent loop) and, when the input asks for it, delivers its outcome, also when it fails or is cancelled. */
export async function withCompletionWebhook(
  input: AgentRunInput,
  body: () => Promise<AgentRunResult>,
): Promise<AgentRunResult> {
  // A malformed webhook fails the run's input check: there is nowhere to deliver.
  if (!input.webhook || checkWebhookField(input.webhook)) return body();
  let result: AgentRunResult;
  try {
    result = await body();
  } catch (err) {
    // Not an end: the chain goes on in the next run, which delivers.
    if (err instanceof ContinueAsNew) throw err;
    // Anything else is a bug that fails the workflow task (retried), not the run: nothing to report yet.
    if (!(err instanceof TemporalFailure)) throw err;
    const cancelled = isCancellation(err);
    // A run that ended with stopReason "error" fails with its result in the failure's details: report that result.
    const ended = err instanceof ApplicationFailure && err.type === AGENT_RUN_FAILED ? err.details?.[0] : undefined;
    if (ended) {
      await deliver(input, { status: "failed", ...outcomeOf(ended as AgentRunResult) });
      throw err;
    }
    await deliver(input, {
      status: cancelled ? "cancelled" : "failed",
      stopReason: cancelled ? "aborted" : "error",
      finalText: "",
      turns: 0,
      usage: emptyUsage(),
      errorMessage: err instanceof Error ? err.message : String(err),
    });
    throw err;
  }
  await deliver(input, {
    // A cancelled run closes its transcript and returns normally, as "aborted".
    status: CancellationScope.current().consideredCancelled ? "cancelled" : "completed",
    ...outcomeOf(result),
  });
  return result;
}

/** What a delivery says of a run's result. */
function outcomeOf(result: AgentRunResult): Omit<RunOutcome, "workflowId" | "runId" | "endedAt" | "status"> {
  return {
    stopReason: result.stopReason,
    finalText: finalText(result),
    turns: result.turns,
    usage: result.usage,
    ...(result.errorMessage !== undefined ? { errorMessage: result.errorMessage } : {}),
    ...(result.output !== undefined ? { output: result.output } : {}),
  };
}

async function deliver(
  input: AgentRunInput,
  outcome: Omit<RunOutcome, "workflowId" | "runId" | "endedAt">,
): Promise<void> {
  const info = workflowInfo();
  const full: RunOutcome = {
    workflowId: info.workflowId,
    runId: info.runId,
    ...outcome,
    endedAt: new Date(Date.now()).toISOString(),
  };
  // The run has ended: a cancel request must not stop its report. A delivery that fails for good does not change the run's outcome.
  await CancellationScope.nonCancellable(async () => {
    try {
      await deliverRunWebhook.executeWithOptions(
        { summary: `webhook · ${input.webhook!.url.replace(/^https?:\/\/([^/?#]+).*$/i, "$1")}` } as ActivityOptions,
        [{ webhook: input.webhook!, outcome: full }],
      );
    } catch (err) {
      log.warn("webhook delivery failed for good", {
        error: err instanceof Error ? (err.cause instanceof Error ? err.cause.message : err.message) : String(err),
      });
    }
  });
}
