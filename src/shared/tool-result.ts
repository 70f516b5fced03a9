/**
 * The one way a tool activity's output becomes a tool-result message. The
 * workflow (the transcript), the worker (a result passed by reference) and the
 * history reader (a finished run's transcript) must build it byte for byte
 * alike: the context digest compares them.
 */
import type { ToolResultMessage } from "@jai/ai";
import type { ExecuteToolOutput } from "./wire.js";

/**
 * The result message of tool call `toolCallId` from its activity's output.
 * `details` (for logs and UI) is kept unless `forModel`: the model's copy never has it, and has the output's
 * `modelContent` (the cut copy of a result kept whole in a blob store) when there is one.
 */
export function toolResultMessage(
  toolCallId: string,
  toolName: string,
  output: ExecuteToolOutput,
  timestamp: number,
  forModel = false,
): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId,
    toolName,
    content: (forModel && output.modelContent) || output.result.content,
    ...(!forModel && output.result.details !== undefined ? { details: output.result.details } : {}),
    isError: output.isError,
    timestamp,
  };
}
