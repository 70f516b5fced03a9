/**
 * No payload over Temporal's limits: a tool's result is cut to a size the
 * model can use (pi's coding tools use ~50 KB / 2,000 lines) with a note that
 * says how much was cut and how to get more; oversized images become a note;
 * `details` is bounded too. A tool's error text is cut to the same limits, and
 * whatever else a failure would carry into history (stack, details, causes) is
 * bounded. Everything stays far below the 2 MB payload limit.
 *
 * With a blob store (External Storage, docs/large-payloads.md) the limits are
 * what the model sees, not what is kept: `keepToolResult` and `keepErrorText`
 * keep the whole result (up to the store's `maxResultBytes`, 20 MB by default)
 * for the transcript, and the cut copy beside it for the model's context.
 */
import type { AgentToolResult, ToolResultLimits } from "../../shared/contracts.js";

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
  return cutToolResult(result, limits, HARD_CEILING).result;
}

/** capToolResult under `ceiling` (bytes of text and images together); `cut`: something was cut or omitted. */
function cutToolResult(
  result: AgentToolResult,
  limits: ToolResultLimits,
  ceiling: number,
  /** Images count against the text's bytes (a kept result's one budget), not a budget of their own. */
  shared = false,
): { result: AgentToolResult; cut: boolean } {
  const l = { ...DEFAULT_LIMITS, ...limits };
  const maxBytes = Math.min(l.maxBytes, ceiling);
  let bytesLeft = maxBytes;
  let linesLeft = l.maxLines;
  let imageBudget = ceiling - maxBytes;
  let omitted = false;
  let totalBytes = 0;
  let totalLines = 0;
  let shownBytes = 0;
  let shownLines = 0;
  let cut = false;
  const content: AgentToolResult["content"] = [];
  for (const block of result.content) {
    if (block.type === "image") {
      const n = block.data.length;
      const budget = shared ? bytesLeft : imageBudget;
      if (n > l.maxImageBytes || n > budget) {
        omitted = true;
        content.push({
          type: "text",
          text: `[Image omitted: ${block.mimeType} of ${size(n)} exceeds the ${size(Math.min(l.maxImageBytes, budget))} limit for tool results.]`,
        });
      } else {
        if (shared) bytesLeft -= n;
        else imageBudget -= n;
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
  return { result: capped, cut: cut || omitted };
}

/** What the transcript keeps of a result whole up to `keepBytes`: text, images and details each within it. */
const keepLimits = (keepBytes: number): Required<ToolResultLimits> => ({
  maxBytes: keepBytes,
  maxLines: Number.MAX_SAFE_INTEGER,
  maxImageBytes: keepBytes,
  maxDetailsBytes: keepBytes,
});

/**
 * A result as a worker with a blob store keeps it: whole up to `keepBytes` (text and images together; beyond it
 * cut with the same note), and, when the run's `limits` would cut it, the model's copy of its content
 * (`modelContent`): the transcript holds the whole result, the model's context what the limits allow.
 */
export function keepToolResult(
  result: AgentToolResult,
  limits: ToolResultLimits,
  keepBytes: number,
): { result: AgentToolResult; modelContent?: AgentToolResult["content"] } {
  const kept = cutToolResult(result, keepLimits(keepBytes), keepBytes, true).result;
  const view = cutToolResult(kept, { ...limits, maxDetailsBytes: keepBytes }, HARD_CEILING);
  return view.cut ? { result: kept, modelContent: view.result.content } : { result: kept };
}

/** An error text as a worker with a blob store keeps it: whole up to `keepBytes`, and the model's cut copy when the limits cut it. */
export function keepErrorText(
  text: string,
  limits: ToolResultLimits,
  keepBytes: number,
): { text: string; modelText?: string } {
  const kept = capErrorText(text, keepLimits(keepBytes), keepBytes);
  const view = capErrorText(kept, limits);
  return view === kept ? { text: kept } : { text: kept, modelText: view };
}

const lineCount = (text: string) => {
  let n = 1;
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) n++;
  return n;
};

/** Room kept under the byte limit for the truncation note, so note and text together stay within it. */
const NOTE_ROOM = 200;

/**
 * A tool's error text (what it threw), cut like a result's text: at most
 * `maxBytes` (note included) and `maxLines`, with a note saying it was cut.
 */
export function capErrorText(text: string, limits: ToolResultLimits = {}, ceiling = HARD_CEILING): string {
  const l = { ...DEFAULT_LIMITS, ...limits };
  const maxBytes = Math.min(l.maxBytes, ceiling);
  const total = bytes(text);
  const totalLines = lineCount(text);
  if (total <= maxBytes && totalLines <= l.maxLines) return text;
  const kept = head(text, Math.max(0, maxBytes - NOTE_ROOM), Math.max(1, l.maxLines - 1));
  const note = `\n[Error message truncated: showing the first ${lineCount(kept)} lines / ${size(bytes(kept))} of ${totalLines} lines / ${size(total)}.]`;
  return bytes(kept) + bytes(note) <= maxBytes ? kept + note : head(note.slice(1), maxBytes, l.maxLines);
}

/** Most bytes of a stack trace a failure takes into history. */
const MAX_STACK_BYTES = 16 * 1024;
/** Most causes of a failure that are kept (the rest of the chain is dropped). */
const MAX_CAUSES = 4;

/**
 * Bounds what a failure thrown out of a tool activity takes into history (the
 * SDK records message, stack, details and the cause chain): the message as
 * capErrorText, the stack to 16 KB, details to `maxDetailsBytes`, at most 4
 * causes. Changes `err` in place where it can and returns it.
 */
export function boundFailure<T>(err: T, limits: ToolResultLimits = {}, depth = 0): T {
  if (!(err instanceof Error)) return err;
  const l = { ...DEFAULT_LIMITS, ...limits };
  const set = (key: string, value: unknown) => {
    try {
      Object.defineProperty(err, key, { value, writable: true, configurable: true, enumerable: false });
    } catch {
      // A frozen error keeps what it has.
    }
  };
  try {
    if (typeof err.message === "string") set("message", capErrorText(err.message, limits));
    if (typeof err.stack === "string" && bytes(err.stack) > MAX_STACK_BYTES)
      set("stack", `${head(err.stack, MAX_STACK_BYTES, 200)}\n    [stack truncated]`);
    const details = (err as { details?: unknown }).details;
    if (details !== undefined) {
      let json: string | undefined;
      try {
        json = JSON.stringify(details);
      } catch {
        json = undefined;
      }
      if (json === undefined || bytes(json) > l.maxDetailsBytes)
        set("details", [{ truncated: true, bytes: json === undefined ? undefined : bytes(json) }]);
    }
    const cause = (err as { cause?: unknown }).cause;
    if (cause !== undefined) set("cause", depth + 1 >= MAX_CAUSES ? undefined : boundFailure(cause, limits, depth + 1));
  } catch {
    // Getters that throw: what cannot be read cannot be bounded, and is left as it is.
  }
  return err;
}
