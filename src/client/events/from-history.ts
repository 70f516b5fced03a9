/**
 * Events of a run rebuilt from its transcript, for a run no event tap holds
 * (finished long ago, or its worker restarted): the same messages, tool calls
 * and results, in pi's order, without token deltas or tool progress. The
 * sequence only grows as the transcript grows, so a position in it is a cursor.
 */
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { AgentEvent, AgentMessage } from "../../shared/contracts.js";

/** `ended`: the run is closed, so its last turn and agent_end are final. */
export function transcriptEvents(messages: AgentMessage[], ended: boolean): AgentEvent[] {
  const out: AgentEvent[] = [{ type: "agent_start" }, { type: "turn_start" }];
  let turnOpen = true;
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i];
    if (!turnOpen) {
      out.push({ type: "turn_start" });
      turnOpen = true;
    }
    if (message.role !== "assistant") {
      out.push({ type: "message_start", message }, { type: "message_end", message });
      continue;
    }
    const assistant = message as AssistantMessage;
    // pi's message_start carries the partial as the stream began: no content yet.
    out.push({ type: "message_start", message: { ...assistant, content: [] } }, { type: "message_end", message });
    const calls = assistant.content.filter((c): c is ToolCall => c.type === "toolCall");
    const results: ToolResultMessage[] = [];
    for (const call of calls)
      out.push({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
    while (results.length < calls.length && messages[i + 1]?.role === "toolResult") {
      const result = messages[++i] as ToolResultMessage;
      results.push(result);
      out.push(
        {
          type: "tool_execution_end",
          toolCallId: result.toolCallId,
          toolName: result.toolName,
          result: { content: result.content, details: result.details },
          isError: result.isError,
        },
        { type: "message_start", message: result },
        { type: "message_end", message: result },
      );
    }
    if (results.length < calls.length && !ended && i === messages.length - 1) return out; // tools still running
    out.push({ type: "turn_end", message: assistant, toolResults: results });
    turnOpen = false;
  }
  if (ended) out.push({ type: "agent_end", messages });
  return out;
}
