/** The model activity: streams one assistant message through @jai/ai and returns it whole. */
import { ApplicationFailure } from "@temporalio/common";
import { stream, type AssistantMessage, type ProviderResponse } from "@jai/ai";
import type { AgentEventSink, StreamAssistantInput } from "../types.js";
import { classifyModelFailure } from "./classify.js";
import { activityEmitter } from "./events.js";
import { withHeartbeats } from "./heartbeat.js";

/** Resolves a provider's API key in the worker; keys never travel through workflow input or history. */
export type ApiKeyResolver = (provider: string) => string | undefined | Promise<string | undefined>;

export function createModelActivity(getApiKey: ApiKeyResolver, onEvent: AgentEventSink | undefined) {
  return async function streamAssistantMessage(input: StreamAssistantInput): Promise<AssistantMessage> {
    const emit = activityEmitter(onEvent);
    const apiKey = await getApiKey(input.model.provider);
    return withHeartbeats(async (signal) => {
      let response: ProviderResponse | undefined;
      let events;
      try {
        events = stream(
          input.model,
          { systemPrompt: input.systemPrompt, messages: input.messages, tools: input.tools },
          { apiKey, signal, onResponse: (r) => void (response = r) },
        );
      } catch (err) {
        // stream() throws only for a model the worker cannot serve (no provider for its api): permanent.
        throw ApplicationFailure.nonRetryable(`Cannot call model ${input.model.provider}/${input.model.id}: ${(err as Error).message}`, "ModelUnsupported");
      }
      let started = false;
      for await (const event of events) {
        if (event.type === "start") {
          started = true;
          emit({ type: "message_start", message: event.partial });
        } else if (event.type !== "done" && event.type !== "error") {
          emit({ type: "message_update", message: event.partial, assistantEvent: event });
        }
      }
      const message = await events.result();
      const failure = classifyModelFailure(message, response);
      if (failure) throw failure;
      if (!started) emit({ type: "message_start", message });
      return message;
    });
  };
}
