/**
 * What a model call (or a compaction) says about the context it means: a delta
 * over what the worker that made the last call holds, tool results by
 * reference to the activity that produced them, and the digest of the whole
 * context as recorded. The worker serves the call only with a context of that
 * digest, so no cache, late attempt or reused tool-call id can change what the
 * model sees.
 */
import type { AgentMessage } from "../shared/contracts.js";
import type { ModelContextRef, ToolResultRef, UserInputRef } from "../shared/wire.js";
import { jsonBytes } from "../shared/payload-limits.js";
import { combineDigests, messageDigest } from "../shared/context-digest.js";
import type { Conversation } from "./conversation.js";

/** New messages ride along inline up to this size; beyond it the worker reads them with the query (no big payloads). */
const APPEND_BUDGET_BYTES = 256 * 1024;

// Context messages are never changed in place (compaction makes new ones), so a message's digest is computed once.
const digests = new WeakMap<object, string>();

/** The digest of the context as the workflow holds it. */
export function recordedDigest(messages: AgentMessage[]): string {
  return combineDigests(
    messages.map((m) => {
      let digest = digests.get(m);
      if (digest === undefined) digests.set(m, (digest = messageDigest(m)));
      return digest;
    }),
  );
}

/** The context of the next model call, as a delta over what the last call's worker holds. */
export function modelContextRef(conversation: Conversation): ModelContextRef {
  const digest = recordedDigest(conversation.context);
  // A tool result that is its activity's output is in history already: send a reference, not a second copy.
  // Keyed by the activity's id, unique in the run, never by the model's tool-call id (models reuse those).
  const append = conversation.context.slice(conversation.workerKnows).map((m): AgentMessage | ToolResultRef => {
    const activityId = m.role === "toolResult" ? conversation.fromActivity.get(m.content) : undefined;
    return m.role === "toolResult" && activityId !== undefined
      ? { ref: "toolResult", activityId, toolCallId: m.toolCallId, timestamp: m.timestamp }
      : m;
  });
  if (jsonBytes(append) <= APPEND_BUDGET_BYTES)
    return { epoch: conversation.contextEpoch, base: conversation.workerKnows, append, digest };
  // Too big: user messages go by reference to the update or input that holds them. The call still names every
  // message it appends, in order, so the transcript can be rebuilt from history exactly (loop-made messages inline).
  const lean = append.map((m): AgentMessage | ToolResultRef | UserInputRef => {
    if (!("role" in m) || m.role !== "user") return m;
    const source = conversation.fromInput.get(m);
    return source !== undefined ? { ref: "userInput", source, timestamp: m.timestamp } : m;
  });
  if (jsonBytes(lean) <= APPEND_BUDGET_BYTES)
    return { epoch: conversation.contextEpoch, base: conversation.workerKnows, append: lean, digest };
  return wholeContextRef(conversation, digest);
}

/** The whole context, read by the worker from its cache or the `modelContext` query. */
export function wholeContextRef(
  conversation: Conversation,
  digest = recordedDigest(conversation.context),
): ModelContextRef {
  return { epoch: conversation.contextEpoch, base: conversation.context.length, append: [], digest };
}
