/** MCP tool results as the loop's tool results: what the model can read stays readable, binary becomes a note. */
import type { ImageContent, TextContent } from "@jai/ai";
import type { AgentToolResult } from "../../shared/contracts.js";

/** A content block of an MCP `tools/call` result (the subset of the spec the loop maps). */
type McpContent =
  | { type: "text"; text: string }
  | { type: "image"; data: string; mimeType: string }
  | { type: "audio"; data: string; mimeType: string }
  | { type: "resource"; resource: { uri: string; mimeType?: string; text?: string; blob?: string } }
  | { type: "resource_link"; uri: string; name?: string; mimeType?: string; description?: string }
  | { type: string; [key: string]: unknown };

/** An MCP result with `isError: true`: the tool failed, and the model should read why. */
export class McpToolError extends Error {
  override name = "McpToolError";
}

const base64Bytes = (data: string) => Math.floor((data.length * 3) / 4);

const textBlock = (text: string): TextContent => ({ type: "text", text });

function block(c: McpContent): TextContent | ImageContent {
  switch (c.type) {
    case "text":
      return textBlock(String(c.text));
    case "image":
      return { type: "image", data: String(c.data), mimeType: String(c.mimeType) };
    case "audio":
      return textBlock(`[audio ${String(c.mimeType)}, ${base64Bytes(String(c.data))} bytes, not shown]`);
    case "resource": {
      const r = (c as { resource: { uri: string; mimeType?: string; text?: string; blob?: string } }).resource;
      const head = `[resource ${r.uri}${r.mimeType ? ` (${r.mimeType})` : ""}`;
      if (typeof r.text === "string") return textBlock(`${head}]\n${r.text}`);
      return textBlock(`${head}, ${base64Bytes(r.blob ?? "")} bytes of binary, not shown]`);
    }
    case "resource_link": {
      const l = c as { uri: string; name?: string; description?: string };
      return textBlock(
        `[resource link ${l.uri}${l.name ? ` "${l.name}"` : ""}${l.description ? `: ${l.description}` : ""}]`,
      );
    }
    default:
      return textBlock(`[${c.type} content, not supported]`);
  }
}

/**
 * Maps a `tools/call` result. `structuredContent` goes to `details` (and to the
 * text when there is no other content); an `isError` result throws McpToolError
 * with its text, which the tool activity turns into an error result.
 */
export function fromMcpResult(result: {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  toolResult?: unknown;
}): AgentToolResult {
  const content = (Array.isArray(result.content) ? (result.content as McpContent[]) : []).map(block);
  if (content.length === 0 && result.structuredContent !== undefined)
    content.push(textBlock(JSON.stringify(result.structuredContent)));
  // Servers of protocol 2024-10-07 answer with `toolResult` instead of content.
  if (content.length === 0 && result.toolResult !== undefined)
    content.push(textBlock(JSON.stringify(result.toolResult)));
  if (result.isError === true) {
    const text = content.map((c) => (c.type === "text" ? c.text : `[image ${c.mimeType}]`)).join("\n");
    throw new McpToolError(text || "The MCP tool reported an error without a message");
  }
  return {
    content,
    ...(result.structuredContent !== undefined ? { details: { structuredContent: result.structuredContent } } : {}),
  };
}
