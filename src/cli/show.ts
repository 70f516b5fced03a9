/**
 * `npm run show -- <workflowId>`: a run's transcript, read from its history
 * alone (no worker needed): every run of a continue-as-new chain, oldest first.
 */
import type { ToolResultMessage } from "@jai/ai";
import type { AgentMessage } from "../shared/contracts.js";
import type { RunStory, StoryItem } from "../client/history-story.js";
import { addUsage, emptyUsage } from "../shared/usage.js";
import { onlyWorkflowId, parseCli, runCli } from "./program.js";
import { modelChain, modelRefName } from "../shared/model-ref.js";

const clip = (text: string, max = 400) => (text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : text);

function contentText(content: AgentMessage["content"]): string {
  if (typeof content === "string") return content;
  return content
    .map((c) =>
      c.type === "text"
        ? c.text
        : c.type === "thinking"
          ? `(thinking) ${c.thinking}`
          : c.type === "image"
            ? `[image ${c.mimeType}]`
            : "",
    )
    .filter(Boolean)
    .join("\n");
}

function formatItem(item: StoryItem): string {
  if (item.kind === "update") return `[${item.eventId}] ${item.name} ← ${clip(JSON.stringify(item.args))}`;
  if (item.kind === "failure")
    return `[${item.eventId}] ✗ ${item.activity}${item.summary ? ` (${item.summary})` : ""} failed: ${item.message}`;
  const m = item.message;
  if (m.role === "user") return `[${item.eventId}] user: ${clip(contentText(m.content))}`;
  if (m.role === "toolResult")
    return `[${item.eventId}] ${m.isError ? "✗" : "✓"} ${m.toolName} (${m.toolCallId}): ${clip(contentText(m.content))}`;
  const lines = [
    `[${item.eventId}] assistant (${m.provider}/${m.model}, ${m.stopReason}, ${m.usage?.totalTokens ?? 0} tokens):`,
  ];
  const text = contentText(m.content.filter((c) => c.type !== "toolCall") as AgentMessage["content"]);
  if (text) lines.push(`  ${clip(text).replace(/\n/g, "\n  ")}`);
  for (const c of m.content)
    if (c.type === "toolCall") lines.push(`  → ${c.name} ${JSON.stringify(c.arguments)} (${c.id})`);
  if (m.errorMessage) lines.push(`  error: ${m.errorMessage}`);
  return lines.join("\n");
}

/** A tool result the loop made itself, printed where it belongs in its run's items. */
type Printed = StoryItem | { kind: "loopResult"; message: ToolResultMessage };

/**
 * Every tool result of the chain's transcripts, by call id. The loop makes some itself (a denial, a call skipped by
 * steering, an aborted or timed-out one): no activity wrote those, so the story has no item of theirs, but the
 * transcript has them (the next model call's context, a carry or the result).
 */
function transcriptResults(
  chain: RunStory[],
  storyTranscript: (story: RunStory) => AgentMessage[],
): Map<string, ToolResultMessage> {
  const results = new Map<string, ToolResultMessage>();
  for (const run of chain) {
    let messages: AgentMessage[];
    try {
      messages = [...storyTranscript(run), ...(run.result?.messages ?? [])];
    } catch {
      continue; // a history the rebuild cannot read: its activity results are still printed
    }
    for (const m of messages) if (m.role === "toolResult") results.set(m.toolCallId, m);
  }
  return results;
}

/** A run's items, each loop-made result at the end of the turn whose reply asked for it (before the next reply). */
function withLoopResults(items: StoryItem[], results: Map<string, ToolResultMessage>): Printed[] {
  const shown = new Set(
    items.flatMap((i) => (i.kind === "message" && i.message.role === "toolResult" ? [i.message.toolCallId] : [])),
  );
  const out: Printed[] = [];
  let due: ToolResultMessage[] = [];
  const flush = () => {
    for (const message of due) out.push({ kind: "loopResult", message });
    due = [];
  };
  for (const item of items) {
    const m = item.kind === "message" ? item.message : undefined;
    if (m?.role !== "assistant") {
      out.push(item);
      continue;
    }
    flush();
    out.push(item);
    for (const c of m.content) {
      const made = c.type === "toolCall" && !shown.has(c.id) ? results.get(c.id) : undefined;
      if (made) due.push(made);
    }
  }
  flush();
  return out;
}

function formatPrinted(item: Printed): string {
  if (item.kind !== "loopResult") return formatItem(item);
  const m = item.message;
  // No event of its own: the loop wrote it into the transcript (the next model call or the run's result).
  return `[loop] ${m.isError ? "✗" : "✓"} ${m.toolName} (${m.toolCallId}): ${clip(contentText(m.content))}`;
}

const USAGE = `usage: npm run show -- <workflowId> [--run-id ID] [--address host:port] [--namespace ns]
  (jai-agent show <workflowId> ...): a run's transcript from its history alone (no worker needed)
Encrypted runs need the workers' JAI_CODEC_KEYS (or JAI_CODEC_KEY_FILE). --debug prints a failure's stack trace.`;

async function main(): Promise<number> {
  const { values, positionals } = parseCli(process.argv.slice(2), {
    "run-id": { type: "string" },
    address: { type: "string" },
    namespace: { type: "string" },
  });
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const workflowId = onlyWorkflowId(positionals);
  // Loaded once the arguments are good: --help and a usage mistake answer without the client.
  const [{ withCliClient }, { readChain }, { storyTranscript }] = await Promise.all([
    import("./connect.js"),
    import("../client/history-view.js"),
    import("../client/history-story.js"),
  ]);
  const chain: RunStory[] = await withCliClient(
    { address: str(values.address), namespace: str(values.namespace) },
    (client) => readChain(client, workflowId, str(values["run-id"])),
  );
  const story = chain[chain.length - 1];
  const model = story.input?.model;
  const events = chain.reduce((n, s) => n + s.events, 0);
  const runs = chain.length > 1 ? ` · ${chain.length} runs (continue-as-new)` : "";
  console.log(
    `run ${workflowId} · ${model === undefined ? "?" : modelChain(model).map(modelRefName).join(" → ")} · ${story.status} · ${events} events${runs}`,
  );
  if (story.input?.systemPrompt) console.log(`system: ${clip(story.input.systemPrompt)}`);
  const results = transcriptResults(chain, storyTranscript);
  for (const run of chain) {
    if (chain.length > 1)
      console.log(
        `── run ${run.runId}${run.previousRunId ? ` (continued from ${run.previousRunId})` : ""} · ${run.status} · ${run.events} events`,
      );
    for (const item of withLoopResults(run.items, results)) console.log(formatPrinted(item));
  }
  const usage = story.result?.usage ?? chain.reduce((sum, run) => addUsage(sum, run.usage), emptyUsage());
  console.log(
    `usage: ${usage.input} in / ${usage.output} out / ${usage.totalTokens} tokens · $${usage.cost.total.toFixed(4)}`,
  );
  if (story.result)
    console.log(
      `result: ${story.result.stopReason} after ${story.result.turns} turns${story.result.messagesOmitted ? ` · ${story.result.messagesOmitted} messages not in the result (all shown above)` : ""}${story.result.errorMessage ? ` · ${story.result.errorMessage}` : ""}`,
    );
  if (story.failure) console.log(`failure: ${story.failure}`);
  return 0;
}

runCli(USAGE, main);
