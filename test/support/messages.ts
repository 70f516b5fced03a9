/** Minimal transcript messages for unit tests of the event paths (no model, no server). */
import type { AssistantMessage } from "@jai/ai";

/** An assistant message holding `text` alone: what the event tap and the transcript readers look at. */
export const assistantText = (text: string) =>
  ({
    role: "assistant",
    content: [{ type: "text", text }],
    usage: {},
    stopReason: "stop",
  }) as unknown as AssistantMessage;
