/**
 * No payload over Temporal's limits: a tool's result is cut to a size the
 * model can use (pi's coding tools use ~50 KB / 2,000 lines) with a note that
 * says how much was cut and how to get more; oversized images become a note;
 * `details` is bounded too. Everything stays far below the 2 MB payload limit.
 */
import type { AgentToolResult, ToolResultLimits } from "../types.js";

export const DEFAULT_LIMITS: Required<ToolResultLimits> = {
  maxBytes: 50 * 1024,
  maxLines: 2000,
  maxImageBytes: 1024 * 1024,
  maxDetailsBytes: 64 * 1024,
};

/** Whatever the limits say, one result never carries more than this (images included). */
const HARD_CEILING = 1_500_000;

const bytes = (s: string) => Buffer.byteLength(s, "utf8");

/** The head of `text` within `maxBytes` and `maxLines`, never splitting a character. */
function head(text: string, maxBytes: number, maxLines: number): string {
  let cut = text;
  const lines = cut.split("\n");
  if (lines.length > maxLines) cut = lines.slice(0, maxLines).join("\n");
  if (bytes(cut) > maxBytes)
    cut = Buffer.from(cut, "utf8")
      .subarray(0, maxBytes)
      .toString("utf8")
      .replace(/\uFFFD$/, "");
  return cut;
}

const size = (n: number) =>
  n >= 1024 * 1024 ? `${(n / 1024 / 1024).toFixed(1)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} bytes`;

export function capToolResult(result: AgentToolResult, limits: ToolResultLimits = {}): AgentToolResult {
  const l = { ...DEFAULT_LIMITS, ...limits };
  const maxBytes = Math.min(l.maxBytes, HARD_CEILING);
  let bytesLeft = maxBytes;
  let linesLeft = l.maxLines;
  let imageBudget = HARD_CEILING - maxBytes;
  let totalBytes = 0;
  let totalLines = 0;
  let shownBytes = 0;
  let shownLines = 0;
  let cut = false;
  const content: AgentToolResult["content"] = [];
  for (const block of result.content) {
    if (block.type === "image") {
      const n = block.data.length;
      if (n > l.maxImageBytes || n > imageBudget) {
        content.push({
          type: "text",
          text: `[Image omitted: ${block.mimeType} of ${size(n)} exceeds the ${size(Math.min(l.maxImageBytes, imageBudget))} limit for tool results.]`,
        });
      } else {
        imageBudget -= n;
        content.push(block);
      }
      continue;
    }
    const n = bytes(block.text);
    const lines = block.text.split("\n").length;
    totalBytes += n;
    totalLines += lines;
    if (n <= bytesLeft && lines <= linesLeft) {
      bytesLeft -= n;
      linesLeft -= lines;
      shownBytes += n;
      shownLines += lines;
      content.push(block);
      continue;
    }
    cut = true;
    if (bytesLeft > 0 && linesLeft > 0) {
      const text = head(block.text, bytesLeft, linesLeft);
      const kept = bytes(text);
      const keptLines = text.split("\n").length;
      bytesLeft -= kept;
      linesLeft -= keptLines;
      shownBytes += kept;
      shownLines += keptLines;
      content.push({ type: "text", text });
    }
  }
  if (cut) {
    content.push({
      type: "text",
      text: `\n[Output truncated: showing the first ${shownLines} lines / ${size(shownBytes)} of ${totalLines} lines / ${size(totalBytes)}. Ask for a smaller part (for example a line range or a narrower query) to see more.]`,
    });
  }
  const capped: AgentToolResult = { ...result, content };
  if (result.details !== undefined) {
    const json = JSON.stringify(result.details) ?? "";
    if (bytes(json) > l.maxDetailsBytes)
      capped.details = { truncated: true, bytes: bytes(json), preview: json.slice(0, 1000) };
  }
  return capped;
}
