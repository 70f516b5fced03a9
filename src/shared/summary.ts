/** One-line texts for the Temporal UI: activity summaries and the run's current details. */
import type { Usage } from "@jai/ai";
import type { AgentRunInput, PendingApproval, PendingClientResult } from "./contracts.js";

const MAX_SUMMARY = 120;

function clip(text: string, max: number): string {
  const oneLine = text.replace(/\s+/g, " ").trim();
  return oneLine.length > max ? `${oneLine.slice(0, max - 1)}…` : oneLine;
}

function shortValue(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  return JSON.stringify(value) ?? "";
}

/** `read_file src/a.ts`, or `edit path=a.ts text=…` when there are several arguments. */
export function toolSummary(toolName: string, args: unknown): string {
  if (typeof args !== "object" || args === null) return clip(toolName, MAX_SUMMARY);
  const entries = Object.entries(args as Record<string, unknown>);
  const view =
    entries.length === 1
      ? shortValue(entries[0][1])
      : entries.map(([k, v]) => `${k}=${clip(shortValue(v), 40)}`).join(" ");
  return clip(view ? `${toolName} ${view}` : toolName, MAX_SUMMARY);
}

/** `turn 3 · anthropic/claude-sonnet-4-5` */
export function modelSummary(turn: number, provider: string, modelId: string): string {
  return clip(`turn ${turn} · ${provider}/${modelId}`, MAX_SUMMARY);
}

/** The run's line in the UI's "current details". */
export function runDetails(status: string, phase: string, turn: number, usage: Usage, extra?: string): string {
  const cost = usage.cost.total > 0 ? ` · $${usage.cost.total.toFixed(4)}` : "";
  const tail = extra ? ` · ${extra}` : "";
  return `**${status}** · ${phase} · turn ${turn} · ${usage.totalTokens} tokens${cost}${tail}`;
}

/** The first non-empty line of the prompt (the last message of a transcript), clipped: the run's line in the UI's list. */
export function promptSummary(prompt: AgentRunInput["prompt"]): string {
  const last = Array.isArray(prompt) ? prompt[prompt.length - 1] : prompt;
  const content = typeof last === "string" ? last : last?.content;
  if (content === undefined) return "";
  const text =
    typeof content === "string" ? content : content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ");
  return clip(text.split("\n").find((l) => l.trim() !== "") ?? "", MAX_SUMMARY);
}

/** The tool calls waiting for a person, one per line with their arguments and the id to pass to approve/deny (markdown). */
export function approvalDetails(pending: PendingApproval[]): string {
  const lines = pending.map(
    (p) => `- \`${toolSummary(p.toolName, p.args).replace(/`/g, "'")}\` · id \`${p.toolCallId}\` · since ${p.since}`,
  );
  return `Awaiting approval:\n\n${lines.join("\n")}`;
}

/** The client tool calls waiting for a client's result, one per line with the id to pass to submitToolResult (markdown). */
export function clientResultDetails(pending: PendingClientResult[]): string {
  const lines = pending.map(
    (p) =>
      `- \`${toolSummary(p.toolName, p.args).replace(/`/g, "'")}\` · id \`${p.toolCallId}\` · since ${p.since}` +
      (p.timeout !== undefined ? ` · timeout ${String(p.timeout)}` : ""),
  );
  return `Awaiting a client's result (submitToolResult):\n${lines.join("\n")}`;
}
