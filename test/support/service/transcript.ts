/** A run's transcript without what legitimately differs between runs (times, ids, provider instance, token estimates). */
import type { AgentMessage } from "../../../src/shared/contracts.js";

export function normalizedTranscript(messages: AgentMessage[]): unknown[] {
  return messages.map((m) => {
    if (m.role === "user") return { role: m.role, content: m.content };
    if (m.role === "toolResult") return { role: m.role, tool: m.toolName, isError: m.isError, content: m.content };
    if (m.role === "assistant") {
      return {
        role: m.role,
        stopReason: m.stopReason,
        content: m.content.map((c) =>
          c.type === "toolCall" ? { type: c.type, name: c.name, arguments: c.arguments } : c,
        ),
      };
    }
    return m;
  });
}
