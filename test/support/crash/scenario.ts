/**
 * The scripted run of the crash tests. The faux model answers from the
 * context it is given (never from a queue), so a re-requested call after a
 * crash gets the same answer, and every process scripts it identically.
 */
import {
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  registerFauxProvider,
  Type,
  type Api,
  type Context,
  type Model,
} from "@jai/ai";
import { appendFileSync } from "node:fs";
import type { AgentTool } from "../../../src/shared/contracts.js";

export const MODEL_REF = "crash/scripted";

/** One JSON line per tool start/end and per model call, with the writing process. */
export function logLine(file: string, entry: Record<string, unknown>): void {
  appendFileSync(file, `${JSON.stringify({ ...entry, pid: process.pid, at: Date.now() })}\n`);
}

const results = (context: Context) => context.messages.filter((m) => m.role === "toolResult").length;
const resultText = (context: Context) =>
  context.messages
    .filter((m) => m.role === "toolResult")
    .map((m) =>
      m.role === "toolResult"
        ? `${m.toolName}:${m.isError ? "error" : m.content.map((c) => (c.type === "text" ? c.text : "")).join("")}`
        : "",
    )
    .join(", ");

const chatter = (turn: number, tag = "") =>
  fauxText(
    `Turn ${turn}${tag}: thinking out loud for a while so that this answer streams slowly enough to be interrupted. `.repeat(
      2,
    ),
  );

export type Variant = "main" | "non-idempotent" | "chaos" | "approval";

/** Turns of the chaos variant; each but the last calls two tools, both with ids the model reuses every turn. */
export const CHAOS_TURNS = 20;

/**
 * main — turn 1: three parallel calls (one slow); 2: one sequential slow call; 3: one fast call; 4: the answer.
 * chaos — turns 1-19: a fast and a slow call with the same two ids every turn; 20: the answer.
 * approval — turn 1: one call that waits for a person's approval; 2: the answer.
 */
export function answer(context: Context, variant: Variant, tag = "") {
  const done = results(context);
  if (variant === "chaos") {
    const turn = done / 2 + 1;
    if (turn < CHAOS_TURNS) {
      return fauxAssistantMessage(
        [
          chatter(turn),
          fauxToolCall("fast", { name: `${turn}a` }, { id: "call_0" }),
          fauxToolCall("slow", { name: `${turn}b` }, { id: "call_1" }),
        ],
        {
          stopReason: "toolUse",
        },
      );
    }
    return fauxAssistantMessage(`Final answer after ${done} results: ${resultText(context)}`);
  }
  if (variant === "approval" && done === 0)
    return fauxAssistantMessage([chatter(1), fauxToolCall("gated", { name: "g" }, { id: "t1-g" })], {
      stopReason: "toolUse",
    });
  if (done === 0) {
    if (variant === "non-idempotent") {
      return fauxAssistantMessage([chatter(1), fauxToolCall("charge_card", { amount: 5 }, { id: "t1-pay" })], {
        stopReason: "toolUse",
      });
    }
    return fauxAssistantMessage(
      [
        chatter(1),
        fauxToolCall("fast", { name: "a" }, { id: "t1-a" }),
        fauxToolCall("fast", { name: "b" }, { id: "t1-b" }),
        fauxToolCall("slow", { name: "c" }, { id: "t1-c" }),
      ],
      {
        stopReason: "toolUse",
      },
    );
  }
  if (variant === "main" && done === 3)
    return fauxAssistantMessage([chatter(2, tag), fauxToolCall("write", { name: "d" }, { id: "t2-d" })], {
      stopReason: "toolUse",
    });
  if (variant === "main" && done === 4)
    return fauxAssistantMessage([chatter(3), fauxToolCall("fast", { name: "e" }, { id: "t3-e" })], {
      stopReason: "toolUse",
    });
  return fauxAssistantMessage(`Final answer after ${done} results: ${resultText(context)}`);
}

/**
 * Registers the scripted model under a fixed api name, so every process resolves it the same way.
 * Each call logs the context it was given (`seen`), for "context seen == context recorded".
 */
export function registerScriptedModel(variant: Variant, logFile: string, tokensPerSecond = 60, tag = ""): Model<Api> {
  const faux = registerFauxProvider({
    api: "crash-faux",
    provider: "crash",
    models: [{ id: "scripted" }],
    tokensPerSecond,
  });
  faux.setResponses(
    Array.from({ length: 500 }, () => (context: Context) => {
      logLine(logFile, { event: "model_call", results: results(context), seen: context.messages });
      return answer(context, variant, tag);
    }),
  );
  return faux.getModel();
}

/**
 * Tools that record every execution; `slow` and `write` take long enough to be killed in.
 * A `tag` marks what this process's tools return, so two executions of one call can be told apart.
 * `local` marks the idempotent ones `fast` (local activities).
 */
export function crashTools(logFile: string, slowMs = 3000, tag = "", local = false): AgentTool<any>[] {
  const tool = (name: string, ms: number, extra: Partial<AgentTool> = {}): AgentTool => ({
    name,
    description: name,
    parameters: Type.Object({ name: Type.Optional(Type.String()), amount: Type.Optional(Type.Number()) }),
    // Enough attempts for the chaos test, where one call can lose several workers in a row.
    activity: { heartbeatTimeout: "2s", retry: { initialInterval: "200ms", maximumAttempts: 10 } },
    async execute(toolCallId, args: any) {
      logLine(logFile, { event: "tool_start", tool: name, toolCallId });
      if (ms > 0) await new Promise((r) => setTimeout(r, ms));
      logLine(logFile, { event: "tool_end", tool: name, toolCallId });
      return { content: [{ type: "text", text: `${name}(${args.name ?? args.amount}) ok${tag}` }] };
    },
    ...(local ? { fast: true } : {}),
    ...extra,
  });
  return [
    tool("fast", 0),
    tool("slow", slowMs),
    tool("write", slowMs, { executionMode: "sequential" }),
    tool("charge_card", slowMs, { idempotent: false }),
    tool("gated", 0, { requiresApproval: true }),
  ];
}
