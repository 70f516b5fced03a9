/** The model activity: streams one assistant message through @jai/ai and returns it whole. */
import { Context } from "@temporalio/activity";
import { ApplicationFailure, CancelledFailure } from "@temporalio/common";
import {
  getApiProvider,
  getEnvApiKey,
  stream,
  type AssistantMessage,
  type AssistantMessageEventStream,
  type ProviderResponse,
} from "@jai/ai";
import type { AgentEventSink } from "../../shared/contracts.js";
import type { ModelReply, StreamAssistantInput } from "../../shared/wire.js";
import {
  classifyModelOutcome,
  keyEnvVars,
  missingApiKeyFailure,
  modelNotServedFailure,
  modelGoneFailure,
  overflowFailure,
  stalledFailure,
  unsupportedModelFailure,
} from "./classify.js";
import { activityEmitter } from "./emit-events.js";
import { FailureType } from "../../shared/failure-types.js";
import type { ContextCache } from "./context-cache.js";
import { currentRun, withHeartbeats } from "./heartbeat.js";
import { trackProviderCall } from "./provider-fetch.js";
import { isBuiltInApi, ModelPolicy } from "./model-policy.js";
import { pauseAsked, type ProviderLimiter, type ProviderPermit } from "./provider-limits.js";

/** Resolves a provider's API key in the worker; keys never travel through workflow input or history. */
export type ApiKeyResolver = (provider: string) => string | undefined | Promise<string | undefined>;

/**
 * Heartbeats run on a timer, so they cannot tell a stalled stream from a slow
 * one: a watchdog aborts a call that received nothing (no byte, no event) for
 * this long, and the failure is retried. Defaults to the heartbeat timeout.
 */
export function stallTimeoutMs(heartbeatTimeoutMs: number | undefined): number {
  return heartbeatTimeoutMs ?? 60_000;
}

/**
 * Attempts of a model call on workers that lack its api (1 s apart, not the provider backoff: the next attempt
 * is for another worker) before the run is told so for good; the run's retry policy may stop it sooner.
 */
export const NOT_SERVED_ATTEMPTS = 8;

/**
 * Whether a call to `provider` through `api` cannot go out without a key: one of @jai/ai's network APIs, for a
 * provider whose key @jai/ai reads from the environment (none there either). Providers with other credentials
 * (Vertex ADC, AWS roles) and the worker's own APIs (custom, faux) take none.
 */
function needsKey(provider: string, api: string): boolean {
  return isBuiltInApi(api) && keyEnvVars(provider) !== undefined && !getEnvApiKey(provider);
}

/**
 * The model activity. Asked with `route: true` (by workflows that route model
 * calls to the worker holding the run's context), it answers with the reply and
 * this worker's own task queue; else with the reply alone.
 */
export interface ModelActivity {
  (input: StreamAssistantInput & { route: true }): Promise<ModelReply>;
  (input: StreamAssistantInput): Promise<AssistantMessage>;
}

/** Waits for the provider's limit; cancelled while waiting: the call ends as cancelled, nothing streamed. */
async function providerPermit(
  limits: ProviderLimiter | undefined,
  provider: string,
  cancelled: AbortSignal,
): Promise<ProviderPermit> {
  if (!limits) return { waitedMs: 0, answered() {}, release() {} };
  try {
    return await limits.acquire(provider, cancelled);
  } catch (err) {
    if (cancelled.aborted) throw new CancelledFailure("model call cancelled while waiting for the provider limit");
    throw err;
  }
}

/** The assistant message of a model activity's output, routed (`{ message, taskQueue }`) or not. */
export function replyMessage(output: unknown): AssistantMessage | undefined {
  const value = output as (AssistantMessage & { message?: undefined }) | ModelReply | undefined;
  if (!value || typeof value !== "object") return undefined;
  return "role" in value && value.role === "assistant" ? value : (value as ModelReply).message;
}

/** Where the model activity's routed replies send the run's next call, and what else it needs of its worker. */
export interface ModelActivityOptions {
  /** The queue only this worker polls, named in routed replies (none: replies name no queue). */
  ownTaskQueue?: () => string | undefined;
  /** The worker's sticky queue timeout (ms), named in routed replies: the run's next call waits that long for it. */
  stickyMs?: () => number | undefined;
  /**
   * The models this worker serves with its keys; the model in the input came through history, so it is held
   * against it again here: the key goes only where the worker serves (or its operator allows) that provider.
   */
  policy?: ModelPolicy;
  /** The worker's identity, named when it lacks a run's model. */
  workerIdentity?: () => string | undefined;
  /** Caps on this worker's model calls per provider. */
  limits?: ProviderLimiter;
}

export function createModelActivity(
  getApiKey: ApiKeyResolver,
  onEvent: AgentEventSink | undefined,
  contexts: ContextCache,
  options: ModelActivityOptions = {},
): ModelActivity {
  const { ownTaskQueue, stickyMs, policy = new ModelPolicy(), workerIdentity, limits } = options;
  const streamAssistantMessage = async (input: StreamAssistantInput): Promise<AssistantMessage | ModelReply> => {
    const info = Context.current().info;
    const queueWaitMs = Math.max(0, Date.now() - info.currentAttemptScheduledTimestampMs);
    const message = await streamOne(input);
    if (!input.route) return message;
    const taskQueue = ownTaskQueue?.();
    const sticky = stickyMs?.();
    return taskQueue
      ? {
          message,
          taskQueue,
          queueWaitMs,
          ...(input.doneAt ? { doneAtMs: Date.now() } : {}),
          ...(sticky !== undefined ? { stickyMs: sticky } : {}),
        }
      : { message };
  };
  return streamAssistantMessage as ModelActivity;

  async function streamOne(input: StreamAssistantInput): Promise<AssistantMessage> {
    const emit = activityEmitter(onEvent);
    const { model } = input;
    // Before anything is sent: a built-in provider's model at a base URL the worker does not serve is refused.
    const verdict = policy.check(model);
    if (!verdict.served)
      throw ApplicationFailure.nonRetryable(
        `Cannot call model ${model.provider}/${model.id}: ${verdict.reason} (the request was not sent)`,
        FailureType.ModelUnsupported,
      );
    const info = Context.current().info;
    const where = { identity: workerIdentity?.(), taskQueue: info.taskQueue };
    // A model of an api this worker lacks (registered by another worker's config module): another worker of the
    // queue may serve it, so the call is retried (each attempt may reach another worker), a bounded number of times.
    if (!getApiProvider(model.api))
      throw modelNotServedFailure(model, model.api, where, info.attempt >= NOT_SERVED_ATTEMPTS, 1000);
    const run = currentRun();
    const stallMs = stallTimeoutMs(Context.current().info.heartbeatTimeoutMs);
    return withHeartbeats(async (cancelled) => {
      // Inside the heartbeat timer: a cache miss reads the context from the workflow first.
      const messages = await contexts.resolve(run, input.context, (why) => Context.current().log.warn(why));
      // The worker's key only for the worker's own models (or allowed base URLs), never for a model the run made up.
      const apiKey = verdict.keyed ? await getApiKey(model.provider) : undefined;
      // A provider that reads its key from the environment, on a worker that has none: say which variable, before sending.
      if (verdict.keyed && !apiKey && needsKey(model.provider, model.api))
        throw missingApiKeyFailure(model.provider, model.id, where);
      // The provider's limit on this worker (providerLimits): wait for a slot, heartbeating, until cancelled.
      const permit = await providerPermit(limits, model.provider, cancelled);
      const call = trackProviderCall();
      const controller = new AbortController();
      const onCancel = () => controller.abort(cancelled.reason);
      cancelled.addEventListener("abort", onCancel);
      let lastEventAt = Date.now();
      let stalled = false;
      const watchdog = setInterval(
        () => {
          if (Date.now() - Math.max(lastEventAt, call.record.lastByteAt ?? 0) > stallMs) {
            stalled = true;
            controller.abort(new Error("stalled"));
          }
        },
        Math.max(50, Math.min(1000, stallMs / 4)),
      );
      let response: ProviderResponse | undefined;
      let message: AssistantMessage;
      let started = false;
      try {
        let events: AssistantMessageEventStream;
        try {
          events = stream(
            model,
            { systemPrompt: input.systemPrompt, messages, tools: input.tools },
            {
              apiKey,
              signal: controller.signal,
              headers: call.headers,
              onResponse: (r) => {
                response = r;
                if (r.status < 400) permit.answered();
              },
            },
          );
        } catch (err) {
          // stream() throws only for a model the worker cannot serve (no provider for its api).
          throw unsupportedModelFailure(model.provider, model.id, err, [apiKey]);
        }
        for await (const event of events) {
          lastEventAt = Date.now();
          if (event.type === "start") {
            started = true;
            emit({ type: "message_start", message: event.partial });
          } else if (event.type !== "done" && event.type !== "error") {
            emit({ type: "message_update", message: event.partial, assistantEvent: event });
          }
        }
        message = await events.result();
      } finally {
        clearInterval(watchdog);
        cancelled.removeEventListener("abort", onCancel);
        call.dispose();
        // A Retry-After pauses every call of this worker to the provider, not only this one's retry.
        const pause = pauseAsked(call.record);
        if (pause !== undefined && limits?.state(model.provider))
          Context.current().log.warn(
            `${model.provider} answered HTTP ${call.record.status} with Retry-After ${pause} ms: this worker's calls to it wait, then one probes`,
          );
        permit.release(pause);
      }
      // Cancelled: report it, handing the workflow what had streamed so far.
      if (cancelled.aborted)
        throw new CancelledFailure(`model call cancelled`, [{ ...message, stopReason: "aborted" }]);
      if (stalled) throw stalledFailure(model.provider, model.id, stallMs);
      const outcome = classifyModelOutcome(message, {
        provider: model.provider,
        modelId: model.id,
        contextWindow: model.contextWindow,
        status: call.record.status ?? response?.status,
        headers: call.record.headers ?? response?.headers,
        networkError: call.record.networkError,
        bodyError: call.record.bodyError,
        providerError: call.record.providerError,
        secrets: [apiKey],
      });
      if ("retry" in outcome) throw outcome.retry;
      // The workflow compacts the context and calls again once; its own message if that does not help.
      if (outcome.overflow) throw overflowFailure(outcome.message);
      if (outcome.gone) throw modelGoneFailure(outcome.message);
      // The workflow appends exactly this reply (as JSON) to the context: cache the same.
      const ended = !outcome.message.content.some((c) => c.type === "toolCall");
      contexts.remember(
        run,
        input.context.epoch,
        [...messages, JSON.parse(JSON.stringify(outcome.message)) as AssistantMessage],
        ended,
      );
      if (!started) emit({ type: "message_start", message: outcome.message });
      return outcome.message;
    });
  }
}
