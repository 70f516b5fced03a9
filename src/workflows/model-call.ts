/** One model call as one activity; its failures become data the loop can end on. */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  log,
  TimeoutFailure,
} from "@temporalio/workflow";
import type { AssistantMessage } from "@jai/ai";
import type { ModelReply } from "../shared/wire.js";
import { modelContextRef } from "./context-ref.js";
import { fitContext, modelTools } from "./context-fit.js";
import { emit as emitEvent } from "./event-sink.js";
import type { RunContext } from "./run-context.js";
import { routedOptions } from "./routing.js";
import { modelSummary } from "../shared/summary.js";
import { activityOverrides, streamAssistantMessage } from "./activity-proxies.js";
import { emptyUsage } from "../shared/usage.js";
import { FailureType } from "../shared/failure-types.js";
import { MODEL_ROUTE_PATCH, hasChange } from "./patches.js";
import { metrics } from "./metrics-sink.js";

// The routing rules live in routing.ts (tool calls use them too); their tests read them here.
export { ROUTED_SCHEDULE_TO_START, routedScheduleToStartMs, taskLost } from "./routing.js";

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

const isReply = (answer: AssistantMessage | ModelReply): answer is ModelReply =>
  (answer as AssistantMessage).role !== "assistant";

const isRouteLost = (err: unknown) =>
  err instanceof ActivityFailure &&
  err.cause instanceof TimeoutFailure &&
  (err.cause.timeoutType === "SCHEDULE_TO_START" || err.cause.timeoutType === "HEARTBEAT");

const isOverflow = (err: ActivityFailure) =>
  err.cause instanceof ApplicationFailure && err.cause.type === FailureType.ContextOverflow;

/**
 * Streams one assistant message. A context overflow compacts the context and
 * calls once more; a call that fails for good becomes a message with stopReason "error".
 *
 * A `then` instead of an async function: every promise a workflow makes costs
 * each replay of it a captured stack trace, and replays are what a dead
 * worker's runs wait for.
 */
export function callModel(run: RunContext, retriedOverflow = false, fallback = 0): Promise<AssistantMessage> {
  const { input, setup, state } = run;
  // A fallback chain's model `fallback` (0: the first); a single model's chain is itself.
  const model = fallback === 0 ? setup.model : setup.fallbacks![fallback - 1];
  const route = hasChange(MODEL_ROUTE_PATCH);
  const queue = route ? state.route.queue : undefined;
  const options = activityOverrides(input.modelActivity, modelSummary(state.turn, model.provider, model.id));
  if (queue) Object.assign(options, routedOptions(input, queue, state.route));
  // A model with a next one in its chain gets fewer attempts: after them the next model takes the call.
  if (fallback < (setup.fallbacks?.length ?? 0) && input.modelActivity?.retry === undefined)
    options.retry = FALLBACK_RETRY;
  const call = streamAssistantMessage.executeWithOptions(options, [
    {
      model,
      systemPrompt: input.systemPrompt,
      context: modelContextRef(state.conversation),
      tools: modelTools(run),
      turn: state.turn,
      ...(route ? { route: true, doneAt: true } : {}),
    },
  ]) as Promise<AssistantMessage | ModelReply>;
  return call.then(
    (answer) => {
      // A worker that predates routing answers with the message alone (and names no queue).
      const reply: ModelReply = isReply(answer) ? answer : { message: answer };
      if (route) state.route.answered(reply);
      // The worker that answered cached the context and its reply.
      state.conversation.modelAnswered();
      return reply.message;
    },
    (err: unknown) => modelCallFailed(run, retriedOverflow, queue, err, fallback),
  );
}

/** Attempts of a model whose chain has a next one: about 3 s of retries, then the next model takes the call. */
export const FALLBACK_RETRY = {
  initialInterval: "1s",
  backoffCoefficient: 2,
  maximumInterval: "10s",
  maximumAttempts: 3,
};

/** Failures that say the provider cannot serve the model now, or the model is gone: what a fallback chain is for. */
const FALLBACK_FAILURES: ReadonlySet<string> = new Set([
  "ModelRateLimited",
  "ModelOverloaded",
  "ModelUnavailable",
  "ModelStreamInterrupted",
  FailureType.ModelGone,
]);

const wantsFallback = (err: ActivityFailure) =>
  (err.cause instanceof ApplicationFailure && FALLBACK_FAILURES.has(err.cause.type ?? "")) ||
  // The call could not finish in time (a provider that hangs): the next model may.
  (err.cause instanceof TimeoutFailure && err.cause.timeoutType === "START_TO_CLOSE");

async function modelCallFailed(
  run: RunContext,
  retriedOverflow: boolean,
  queue: string | undefined,
  err: unknown,
  fallback: number,
): Promise<AssistantMessage> {
  const { setup } = run;
  const model = fallback === 0 ? setup.model : setup.fallbacks![fallback - 1];
  // The worker the call was sent to is gone (not picked up in time, or stopped heartbeating): any worker takes it.
  if (queue && isRouteLost(err) && !CancellationScope.current().consideredCancelled) {
    run.state.route.leave();
    return callModel(run, retriedOverflow, fallback);
  }
  // A cancel whose model worker is dead ends in a heartbeat timeout, not a cancellation: it is still a cancel.
  if (isCancellation(err) || CancellationScope.current().consideredCancelled) {
    throw new CancelledDuringModelCall(err instanceof ActivityFailure ? partialOf(err) : undefined, err);
  }
  if (!(err instanceof ActivityFailure)) throw err;
  if (isOverflow(err) && !retriedOverflow && (await fitContext(run, "overflow"))) return callModel(run, true, fallback);
  // The next model of the chain takes the call; the message it answers with names it.
  if (fallback < (setup.fallbacks?.length ?? 0) && wantsFallback(err)) {
    const next = setup.fallbacks![fallback];
    log.warn("model call falls back to the next model of the chain", {
      from: `${model.provider}/${model.id}`,
      to: `${next.provider}/${next.id}`,
      reason: err.cause?.message ?? err.message,
    });
    metrics.modelFallback(`${model.provider}/${model.id}`, `${next.provider}/${next.id}`);
    return callModel(run, retriedOverflow, fallback + 1);
  }
  const gone = err.cause instanceof ApplicationFailure && err.cause.type === FailureType.ModelGone;
  const message: AssistantMessage = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: "error",
    errorMessage:
      isOverflow(err) || gone
        ? (err.cause?.message ?? "Context overflow")
        : `Model call failed: ${err.cause?.message ?? err.message}${fallback > 0 ? ` (the last model of the chain of ${fallback + 1})` : ""}`,
    timestamp: Date.now(),
  };
  emitEvent({ type: "message_start", message });
  return message;
}
