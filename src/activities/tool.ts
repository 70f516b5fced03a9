/** The tool activity: validates and coerces arguments, then runs the tool's `execute` once. */
import { CancelledFailure } from "@temporalio/common";
import { validateToolArguments } from "@jai/ai";
import type { AgentEventSink, AgentTool, AgentToolResult, ExecuteToolInput, ExecuteToolOutput } from "../types.js";
import { activityEmitter } from "./events.js";
import { withHeartbeats } from "./heartbeat.js";

function errorOutput(text: string): ExecuteToolOutput {
  return { result: { content: [{ type: "text", text }] }, isError: true };
}

/** Checks what a tool returned and makes it plain JSON (it goes into history). */
export function normalizeToolResult(toolName: string, value: unknown): AgentToolResult {
  const result = value as AgentToolResult | undefined;
  if (typeof result !== "object" || result === null || !Array.isArray(result.content)) {
    throw new Error(`Tool ${toolName} returned an invalid result: expected { content: [...] }`);
  }
  for (const block of result.content) {
    const ok =
      (block?.type === "text" && typeof block.text === "string") ||
      (block?.type === "image" && typeof block.data === "string" && typeof block.mimeType === "string");
    if (!ok) throw new Error(`Tool ${toolName} returned an invalid content block: ${JSON.stringify(block)?.slice(0, 200)}`);
  }
  return JSON.parse(
    JSON.stringify({
      content: result.content,
      ...(result.details !== undefined ? { details: result.details } : {}),
      ...(result.terminate === true ? { terminate: true } : {}),
    }),
  ) as AgentToolResult;
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export function createToolActivity(tools: Map<string, AgentTool<any>>, onEvent: AgentEventSink | undefined) {
  return async function executeTool(input: ExecuteToolInput): Promise<ExecuteToolOutput> {
    const tool = tools.get(input.toolName);
    if (!tool) return errorOutput(`Tool ${input.toolName} not found`);
    let args: unknown;
    try {
      args = validateToolArguments(tool, { type: "toolCall", id: input.toolCallId, name: input.toolName, arguments: input.args });
    } catch (err) {
      return errorOutput(errorText(err));
    }
    const emit = activityEmitter(onEvent);
    return withHeartbeats(async (signal) => {
      let live = true;
      const onUpdate = (partial: AgentToolResult) => {
        if (!live) return;
        try {
          emit({ type: "tool_execution_update", toolCallId: input.toolCallId, toolName: input.toolName, partial: normalizeToolResult(input.toolName, partial) });
        } catch {
          // A malformed progress report is dropped; the final result is what counts.
        }
      };
      try {
        const value = await tool.execute(input.toolCallId, args as never, signal, onUpdate);
        return { result: normalizeToolResult(input.toolName, value), isError: false };
      } catch (err) {
        if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new CancelledFailure("tool cancelled");
        return errorOutput(errorText(err));
      } finally {
        live = false;
      }
    });
  };
}
