/**
 * The offline demo model: a scripted stand-in for an LLM (the faux provider),
 * clearly labelled, so a newcomer without an API key sees the whole machinery:
 * streaming, a tool call, parallel tool calls, results fed back, a final answer.
 * It answers from the context it is given, so a retried call gets the same answer. Given more tools than the
 * file tools (a client tool, a tool a policy makes ask for approval) it calls each once, and given a typed
 * output's final tool it answers through it, with arguments its schema accepts: each feature shows without a key.
 */
import {
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  registerFauxProvider,
  type Api,
  type AssistantMessage,
  type Context,
  type Model,
  type RegisterFauxProviderOptions,
} from "@jai/ai";
import { OUTPUT_TOOL } from "../shared/output-schema.js";

export const DEMO_LABEL = "offline demo model (scripted, no LLM)";
const CANDIDATES = ["package.json", "README.md", "tsconfig.json", "go.mod", "pyproject.toml", "Cargo.toml"];

interface Seen {
  path: string;
  text: string;
}

/** Successful results of `toolName`, with the path the model asked for (results carry no args). */
function results(context: Context, toolName: string): Seen[] {
  const paths = new Map<string, string>();
  for (const m of context.messages) {
    if (m.role === "assistant")
      for (const c of m.content) if (c.type === "toolCall") paths.set(c.id, String(c.arguments.path ?? "."));
  }
  return context.messages.flatMap((m) =>
    m.role === "toolResult" && m.toolName === toolName && !m.isError
      ? [
          {
            path: paths.get(m.toolCallId) ?? "?",
            text: m.content.map((c) => (c.type === "text" ? c.text : "")).join(""),
          },
        ]
      : [],
  );
}

function describeFile({ path, text }: Seen): string {
  try {
    const json = JSON.parse(text) as { name?: string; description?: string; dependencies?: object };
    if (json.name)
      return `- ${path}: package "${json.name}"${json.description ? ` (${json.description})` : ""}, ${Object.keys(json.dependencies ?? {}).length} dependencies`;
    return `- ${path}: JSON with ${Object.keys(json).join(", ")}`;
  } catch {
    const heading = text.split("\n").find((l) => l.startsWith("#"));
    return heading
      ? `- ${path}: titled "${heading.replace(/^#+\s*/, "")}"`
      : `- ${path}: ${text.split("\n").length} lines`;
  }
}

function summarize(listing: string, files: Seen[]): string {
  const lines = [
    `Here is what I found (${DEMO_LABEL}):`,
    `- the workspace has ${listing.split("\n").filter(Boolean).length} entries`,
  ];
  lines.push(...files.map(describeFile));
  lines.push("Set JAI_MODEL=provider/modelId and that provider's API key to talk to a real model.");
  return lines.join("\n");
}

const OWN_TOOLS = new Set(["list_dir", "read_file", OUTPUT_TOOL]);

/** Arguments a JSON schema accepts, made from what the demo knows (`text`, `count`): the required fields only. */
function demoArgs(schema: unknown, text: string, count: number): unknown {
  const s = (schema ?? {}) as {
    type?: string | string[];
    enum?: unknown[];
    const?: unknown;
    properties?: Record<string, unknown>;
    required?: string[];
    items?: unknown;
    minItems?: number;
  };
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) return s.enum[0];
  const type = Array.isArray(s.type) ? s.type[0] : (s.type ?? (s.properties ? "object" : "string"));
  switch (type) {
    case "object":
      return Object.fromEntries((s.required ?? []).map((k) => [k, demoArgs(s.properties?.[k], text, count)]));
    case "array":
      return Array.from({ length: s.minItems ?? 0 }, () => demoArgs(s.items, text, count));
    case "integer":
    case "number":
      return count;
    case "boolean":
      return true;
    case "null":
      return null;
    default:
      return text;
  }
}

/** Registers the demo model in this process and returns it; the worker must be told about it (`models`). */
export function registerDemoModel(): Model<Api> {
  const answer = (context: Context) => {
    const listings = results(context, "list_dir").map((r) => r.text);
    const reads = results(context, "read_file");
    if (listings.length === 0) {
      return fauxAssistantMessage(
        [fauxText(`[${DEMO_LABEL}] Let me look at the workspace first.`), fauxToolCall("list_dir", { path: "." })],
        { stopReason: "toolUse" },
      );
    }
    const present = listings[0].split("\n").map((l) => l.trim());
    const wanted = CANDIDATES.filter((f) => present.includes(f)).slice(0, 3);
    const alreadyRead = context.messages.some((m) => m.role === "toolResult" && m.toolName === "read_file");
    if (!alreadyRead && wanted.length > 0) {
      return fauxAssistantMessage(
        [
          fauxText(`I'll read ${wanted.join(", ")} in parallel.`),
          ...wanted.map((path) => fauxToolCall("read_file", { path, limit: 60 })),
        ],
        { stopReason: "toolUse" },
      );
    }
    // Every other tool it is offered (a client tool, one a policy asks approval for), once each, in turn.
    const called = new Set(context.messages.flatMap((m) => (m.role === "toolResult" ? [m.toolName] : [])));
    const next = (context.tools ?? []).find((t) => !OWN_TOOLS.has(t.name) && !called.has(t.name));
    const summary = summarize(listings[0], reads);
    const entries = listings[0].split("\n").filter(Boolean).length;
    if (next)
      return fauxAssistantMessage(
        [
          fauxText(`[${DEMO_LABEL}] Now ${next.name}, as the run offers it.`),
          fauxToolCall(next.name, demoArgs(next.parameters, `demo: ${entries} workspace entries`, entries) as never),
        ],
        { stopReason: "toolUse" },
      );
    // A typed output: the answer through its final tool, with arguments its schema accepts.
    const final = context.tools?.find((t) => t.name === OUTPUT_TOOL);
    if (final && !called.has(OUTPUT_TOOL))
      return fauxAssistantMessage([fauxToolCall(OUTPUT_TOOL, demoArgs(final.parameters, summary, entries) as never)], {
        stopReason: "toolUse",
      });
    return fauxAssistantMessage(summary);
  };
  return registerEndlessModel(
    {
      provider: "demo",
      // The run records the model, api included, and any worker process may make its next call: one fixed
      // api id in every process (the faux default is random per process).
      api: "jai-demo-offline",
      models: [{ id: "offline-scripted", name: DEMO_LABEL, contextWindow: 32000, maxTokens: 2000 }],
      tokensPerSecond: 150,
    },
    answer,
  );
}

/**
 * Registers a faux provider that answers every call with `answer`. A worker process serves it for as long as it
 * runs: every call queues one more answer. The queue is taken from synchronously at the call and refilled when the
 * answer is made, so keep a margin for concurrent calls.
 */
export function registerEndlessModel(
  options: RegisterFauxProviderOptions,
  answer: (context: Context) => AssistantMessage,
): Model<Api> {
  const faux = registerFauxProvider(options);
  const endless = (context: Context) => {
    faux.appendResponses([endless]);
    return answer(context);
  };
  faux.setResponses(Array.from({ length: 1000 }, () => endless));
  return faux.getModel();
}
