/**
 * Keeping the model's context inside its window. Pure and deterministic: the
 * workflow runs it before a model call when the estimate is over budget, and
 * when the provider answers with a context overflow (once, then it retries).
 */
import type { Api, Model, Tool } from "@jai/ai";
import type { AgentMessage, AgentRunInput } from "../shared/contracts.js";

/** Tokens an image costs, roughly, whatever its size (providers bill ~1-1.6k for a typical one). */
const IMAGE_TOKENS = 1200;
/** Characters kept from a shortened tool result, so the model remembers what it was. */
const KEEP_CHARS = 200;

// Messages are never changed in place (shortening and compaction make new ones), so what one weighs is computed
// once: the workflow estimates its whole context before every model call, and a replay does it again for every turn.
const weights = new WeakMap<object, { chars: number; images: number }>();
const toolChars = new WeakMap<object, number>();

function weigh(m: AgentMessage): { chars: number; images: number } {
  let weight = weights.get(m);
  if (weight) return weight;
  weight = { chars: 0, images: 0 };
  if (typeof m.content === "string") weight.chars = m.content.length;
  else
    for (const c of m.content) {
      if (c.type === "image") weight.images++;
      else weight.chars += JSON.stringify(c).length;
    }
  weights.set(m, weight);
  return weight;
}

/** A rough estimate (4 characters a token), good enough to act before the provider refuses. */
export function estimateTokens(messages: AgentMessage[], systemPrompt = "", tools: Tool[] = []): number {
  let toolsLength = toolChars.get(tools);
  if (toolsLength === undefined) toolChars.set(tools, (toolsLength = JSON.stringify(tools).length));
  let chars = systemPrompt.length + toolsLength;
  let images = 0;
  for (const m of messages) {
    const weight = weigh(m);
    chars += weight.chars;
    images += weight.images;
  }
  return Math.ceil(chars / 4) + images * IMAGE_TOKENS;
}

/** The token budget of a run's context: its own, else the model's window less the room for the answer. */
export function contextBudget(input: AgentRunInput, model: Model<Api>): number | undefined {
  if (input.contextBudgetTokens !== undefined) return input.contextBudgetTokens;
  if (!model.contextWindow) return undefined;
  return Math.max(1000, model.contextWindow - Math.min(model.maxTokens || 0, Math.floor(model.contextWindow / 4)));
}

function textOf(m: AgentMessage): string {
  if (typeof m.content === "string") return m.content;
  return m.content
    .map((c) => (c.type === "text" ? c.text : c.type === "image" ? `[image ${c.mimeType}]` : ""))
    .join("");
}

/**
 * Default strategy: shorten the oldest tool results first (never those after
 * the last assistant message), keeping every message, so every tool call keeps
 * its result. Returns the new context and how many results were shortened.
 */
export function shortenToolResults(
  context: AgentMessage[],
  targetTokens: number,
  estimate: (messages: AgentMessage[]) => number,
): { context: AgentMessage[]; shortened: number } {
  const out = [...context];
  let lastAssistant = -1;
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i].role === "assistant") {
      lastAssistant = i;
      break;
    }
  }
  let shortened = 0;
  let tokens = estimate(out);
  for (let i = 0; i < lastAssistant && tokens > targetTokens; i++) {
    const m = out[i];
    if (m.role !== "toolResult") continue;
    const text = textOf(m);
    if (text.startsWith("[Earlier tool result shortened")) continue;
    const note = `[Earlier tool result shortened to fit the context window; it had ${text.length} characters and began: ${text.slice(0, KEEP_CHARS)}]`;
    if (note.length >= text.length && !m.content.some((c) => c.type === "image")) continue;
    out[i] = { ...m, content: [{ type: "text", text: note }] };
    shortened++;
    tokens = estimate(out);
  }
  return { context: out, shortened };
}

/** Every tool call has a result after it and every result answers an earlier call: what providers require. */
export function structureProblem(context: AgentMessage[]): string | undefined {
  const open = new Set<string>();
  for (const m of context) {
    if (m.role === "assistant") for (const c of m.content) if (c.type === "toolCall") open.add(c.id);
    if (m.role === "toolResult") {
      if (!open.has(m.toolCallId)) return `tool result ${m.toolCallId} answers no earlier tool call`;
      open.delete(m.toolCallId);
    }
  }
  return open.size > 0
    ? `tool call${open.size > 1 ? "s" : ""} ${[...open].join(", ")} lost ${open.size > 1 ? "their results" : "its result"}`
    : undefined;
}
