/** One model call as one activity; its failures become data the loop can end on. */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  proxyActivities,
  proxySinks,
  type ActivityOptions,
} from "@temporalio/workflow";
import type { AssistantMessage } from "@jai/ai";
import type { createActivities } from "../activities/index.js";
import type { AgentRunInput, RunSetup } from "../types.js";
import { modelContextRef } from "./context-ref.js";
import { fitContext, modelTools } from "./context-fit.js";
import type { AgentSinks } from "./definitions.js";
import type { RunState } from "./run-state.js";
import { modelSummary } from "./summary.js";
import { activityOverrides } from "./tool-calls.js";
import { emptyUsage } from "./usage.js";

type Activities = ReturnType<typeof createActivities>;

const MODEL_DEFAULTS: ActivityOptions = {
  startToCloseTimeout: "10m",
  heartbeatTimeout: "30s",
  retry: { initialInterval: "2s", backoffCoefficient: 2, maximumInterval: "60s", maximumAttempts: 8 },
  // On cancellation, wait for the activity: it hands back the partial message it had streamed.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};

const { streamAssistantMessage } = proxyActivities<Activities>(MODEL_DEFAULTS);
const { agent } = proxySinks<AgentSinks>();

/** Thrown when the run is cancelled during a model call; carries what had streamed by then. */
export class CancelledDuringModelCall extends Error {
  constructor(
    readonly partial: AssistantMessage | undefined,
    readonly original: unknown,
  ) {
    super("cancelled during model call");
  }
}

function partialOf(err: ActivityFailure): AssistantMessage | undefined {
  const details = err.cause instanceof CancelledFailure ? err.cause.details : undefined;
  const partial = details?.[0] as AssistantMessage | undefined;
  return partial && partial.role === "assistant" ? { ...partial, stopReason: "aborted" } : undefined;
}

const isOverflow = (err: ActivityFailure) => err.cause instanceof ApplicationFailure && err.cause.type === "ContextOverflow";

/**
 * Streams one assistant message. A context overflow compacts the context and
 * calls once more; a call that fails for good becomes a message with stopReason "error".
 */
export async function callModel(input: AgentRunInput, setup: RunSetup, run: RunState, retriedOverflow = false): Promise<AssistantMessage> {
  const { model } = setup;
  try {
    const message = await streamAssistantMessage.executeWithOptions(activityOverrides(input.modelActivity, modelSummary(run.turn, model.provider, model.id)), [
      {
        model,
        systemPrompt: input.systemPrompt,
        context: modelContextRef(run),
        tools: modelTools(setup),
        turn: run.turn,
      },
    ]);
    // The worker that answered cached the context and its reply.
    run.workerKnows = run.context.length + 1;
    return message;
  } catch (err) {
    // A cancel whose model worker is dead ends in a heartbeat timeout, not a cancellation: it is still a cancel.
    if (isCancellation(err) || CancellationScope.current().consideredCancelled) {
      throw new CancelledDuringModelCall(err instanceof ActivityFailure ? partialOf(err) : undefined, err);
    }
    if (!(err instanceof ActivityFailure)) throw err;
    if (isOverflow(err) && !retriedOverflow && (await fitContext(input, setup, run, "overflow"))) return callModel(input, setup, run, true);
    const message: AssistantMessage = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: emptyUsage(),
      stopReason: "error",
      errorMessage: isOverflow(err) ? (err.cause?.message ?? "Context overflow") : `Model call failed: ${err.cause?.message ?? err.message}`,
      timestamp: Date.now(),
    };
    agent.emit({ type: "message_start", message });
    return message;
  }
}
