/**
 * `npm run show -- <workflowId>`: a run's transcript, read from its history
 * alone (no worker needed): every run of a continue-as-new chain, oldest first.
 */
import type { AgentMessage } from "../types.js";
import type { RunStory, StoryItem } from "../history-story.js";
import { readChain } from "../history-view.js";
import { addUsage, emptyUsage } from "../common/usage.js";
import { connectClient, flag } from "./connect.js";

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

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const workflowId = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
  if (!workflowId) {
    console.error("usage: npm run show -- <workflowId> [--run-id ID] [--address host:port]");
    return 2;
  }
  const { client, close } = await connectClient(args);
  try {
    const chain: RunStory[] = await readChain(client, workflowId, flag(args, "--run-id"));
    const story = chain[chain.length - 1];
    const model = story.input?.model;
    const events = chain.reduce((n, s) => n + s.events, 0);
    const runs = chain.length > 1 ? ` · ${chain.length} runs (continue-as-new)` : "";
    console.log(
      `run ${workflowId} · ${typeof model === "string" ? model : `${model?.provider}/${model?.id}`} · ${story.status} · ${events} events${runs}`,
    );
    if (story.input?.systemPrompt) console.log(`system: ${clip(story.input.systemPrompt)}`);
    for (const run of chain) {
      if (chain.length > 1)
        console.log(
          `── run ${run.runId}${run.previousRunId ? ` (continued from ${run.previousRunId})` : ""} · ${run.status} · ${run.events} events`,
        );
      for (const item of run.items) console.log(formatItem(item));
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
  } finally {
    await close();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
