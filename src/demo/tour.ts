/**
 * The offline tour (`npm start -- --tour`): a scripted model, clearly labelled, and a few tools that walk a
 * person with no API key through what the loop does with people in it — parallel tool calls, an approval,
 * steering, a sub-agent, an MCP tool and a session prompt — telling them at each waiting point what to type.
 *
 * The model reads the conversation, never a counter: each answer follows from the tool results and user
 * messages it is given (so a retried call gets the same answer, a denied approval or a steering message sent
 * at another moment is answered as such, and a worker without the MCP server gets a tour without that step).
 */
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Context as ActivityContext } from "@temporalio/activity";
import type { Client } from "@temporalio/client";
import {
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  Type,
  type Api,
  type AssistantMessage,
  type Context,
  type Message,
  type Model,
} from "@jai/ai";
import { getAgentRun } from "../client/client.js";
import { registerEndlessModel } from "./offline-model.js";
import { agentTool } from "../worker/subagents/agent-tool.js";
import { createFileTools } from "../worker/tools/fs-tools.js";
import type { AgentEvent, AgentTool } from "../shared/contracts.js";

export const TOUR_LABEL = "offline tour model (scripted, no LLM)";
export const TOUR_MODEL = "demo/offline-tour";
export const TOUR_PROMPT = "Show me around: what can this agent loop do?";
export const TOUR_SYSTEM_PROMPT = "You are giving a newcomer a tour of jai-agent.";
/** The sub-agent's system prompt: how the one model knows it answers as the child. */
const HELPER_SYSTEM_PROMPT = "You are the tour's helper, a sub-agent: list the workspace and report on it.";

/** The tools the tour model calls, by role. */
export const TOUR_TOOLS = {
  note: "save_note",
  wait: "wait_for_steering",
  helper: "helper",
  mcpServer: "tour",
  mcp: "tour__count_words",
} as const;

const textOf = (m: Message | undefined): string => {
  const c = m?.content;
  if (typeof c === "string") return c;
  return (c ?? []).map((b) => (b.type === "text" ? b.text : "")).join("");
};
const quote = (s: string, max = 200) => JSON.stringify(s.length > max ? `${s.slice(0, max)}…` : s);

/** Index of the last message matching `test`, or -1 (the build targets ES2022: no findLastIndex). */
function lastIndex(messages: Message[], test: (m: Message) => boolean): number {
  for (let i = messages.length - 1; i >= 0; i--) if (test(messages[i])) return i;
  return -1;
}

interface Result {
  text: string;
  isError: boolean;
}

/** The latest result of `toolName` in the context, if it has one. */
function lastResult(context: Context, toolName: string): Result | undefined {
  const m = context.messages[lastIndex(context.messages, (x) => x.role === "toolResult" && x.toolName === toolName)];
  return m && m.role === "toolResult" ? { text: textOf(m), isError: m.isError } : undefined;
}

/** Texts of the user messages after the last assistant message: steering, a follow-up or a session prompt. */
function freshUserTexts(context: Context): string[] {
  const last = lastIndex(context.messages, (m) => m.role === "assistant");
  if (last < 0) return [];
  return context.messages.slice(last + 1).flatMap((m) => (m.role === "user" ? [textOf(m)] : []));
}

function firstHeading(text: string): string | undefined {
  return text
    .split("\n")
    .find((l) => l.startsWith("#"))
    ?.replace(/^#+\s*/, "");
}

const entries = (listing: string) => listing.split("\n").filter(Boolean);
const plural = (n: number, what: string) => `${n} ${what}${n === 1 ? "y" : "ies"}`;
const turn = (parts: string[], calls: ReturnType<typeof fauxToolCall>[]): AssistantMessage =>
  fauxAssistantMessage([fauxText(parts.join("\n")), ...calls], { stopReason: calls.length ? "toolUse" : "stop" });

/** The helper sub-agent's answers: list the workspace, then report. */
function helperAnswer(context: Context): AssistantMessage {
  const listing = lastResult(context, "list_dir");
  const canList = context.tools?.some((t) => t.name === "list_dir");
  if (!listing && canList)
    return turn(
      ["Sub-agent here: listing the workspace."],
      [fauxToolCall("list_dir", { path: "." }, { id: "sub-ls" })],
    );
  if (!listing || listing.isError)
    return turn([`Sub-agent here: I could not list the workspace${listing ? ` (${listing.text})` : ""}.`], []);
  const names = entries(listing.text);
  return turn(
    [
      `Sub-agent report (a child workflow with its own history): the workspace has ${plural(names.length, "entr")}, e.g. ${names.slice(0, 4).join(", ")}.`,
    ],
    [],
  );
}

/** The tour itself: which step comes next follows from the results in the conversation. */
function tourAnswer(context: Context): AssistantMessage {
  const offered = new Set((context.tools ?? []).map((t) => t.name));
  const listing = lastResult(context, "list_dir");
  const readme = lastResult(context, "read_file");
  const note = lastResult(context, TOUR_TOOLS.note);
  const waited = lastResult(context, TOUR_TOOLS.wait);
  const helper = lastResult(context, TOUR_TOOLS.helper);
  const counted = lastResult(context, TOUR_TOOLS.mcp);
  const fresh = freshUserTexts(context);
  const said = fresh.join(" / ");
  // Steering or a follow-up that arrived at another moment than step 4 is still read and answered.
  const heard = fresh.length ? [`(You said ${quote(said)}: it entered the transcript before this model call.)`] : [];

  if (!listing) {
    const prompt = textOf(context.messages.find((m) => m.role === "user"));
    return turn(
      [
        `[${TOUR_LABEL}] You asked ${quote(prompt)}. Welcome to the tour: six steps, each one a real part of the loop.`,
        "Step 1 of 6 — parallel tools: I call list_dir and read_file in one message; they run as two activities at once.",
      ],
      [
        fauxToolCall("list_dir", { path: "." }, { id: "tour-ls" }),
        fauxToolCall("read_file", { path: "README.md", limit: 40 }, { id: "tour-read" }),
      ],
    );
  }
  const count = listing.isError ? 0 : entries(listing.text).length;
  const title = readme && !readme.isError ? firstHeading(readme.text) : undefined;
  if (!note && offered.has(TOUR_TOOLS.note)) {
    return turn(
      [
        ...heard,
        `Both came back: the workspace has ${plural(count, "entr")}; ${readme?.isError ? `README.md could not be read (${readme.text}) — an error result is just a result, the run goes on` : `README.md is titled ${quote(title ?? "(no heading)")}`}.`,
        `Step 2 of 6 — an approval: I want to write a note with ${TOUR_TOOLS.note}, a tool that needs a person's yes.`,
        "The run now waits as a workflow condition: no worker is busy, and it would wait the same through a restart.",
      ],
      [
        fauxToolCall(
          TOUR_TOOLS.note,
          { text: `Tour note: ${plural(count, "entr")} in the workspace; README: ${title ?? "none"}.` },
          { id: "tour-note" },
        ),
      ],
    );
  }
  if (!waited && offered.has(TOUR_TOOLS.wait)) {
    return turn(
      [
        ...heard,
        note
          ? note.isError
            ? `The note was not written: ${note.text}`
            : `Approved, so it ran: ${note.text}`
          : "(No note tool here.)",
        "Step 3 of 6 — steering: send me a steering message now (any text). I wait for it with a tool;",
        "it enters the transcript before my next model call, and I will quote it back.",
      ],
      [fauxToolCall(TOUR_TOOLS.wait, {}, { id: "tour-wait" })],
    );
  }
  // The steering message is the user message entered after the wait's result (read again at later steps).
  const waitedAt = lastIndex(context.messages, (m) => m.role === "toolResult" && m.toolName === TOUR_TOOLS.wait);
  const steeringMessage = waitedAt < 0 ? undefined : context.messages.slice(waitedAt).find((m) => m.role === "user");
  const steering = steeringMessage ? textOf(steeringMessage) : undefined;
  const steered = steering
    ? `You steered me with ${quote(steering)}: it entered the transcript after the waiting tool's result and before this model call.`
    : `No steering came${waited ? ` (${waited.text})` : ""}; going on.`;
  if (!helper && offered.has(TOUR_TOOLS.helper)) {
    return turn(
      [
        `Steering received. ${steered}`,
        `Step 4 of 6 — a sub-agent: ${TOUR_TOOLS.helper} is another agent run, started as a child workflow; its answer is my tool result.`,
      ],
      [
        fauxToolCall(
          TOUR_TOOLS.helper,
          { prompt: "List the workspace and tell me how many entries it has." },
          { id: "tour-helper" },
        ),
      ],
    );
  }
  if (!counted && offered.has(TOUR_TOOLS.mcp)) {
    return turn(
      [
        ...heard,
        helper ? `The sub-agent answered: ${helper.text}` : "(No sub-agent tool here.)",
        `Step 5 of 6 — an MCP tool: ${TOUR_TOOLS.mcp} is served by an MCP server (Streamable HTTP) the worker lists at the run's setup. I ask it to count the words of your steering message.`,
      ],
      [fauxToolCall(TOUR_TOOLS.mcp, { text: steering ?? TOUR_PROMPT }, { id: "tour-mcp" })],
    );
  }
  const lastAssistant = context.messages[lastIndex(context.messages, (m) => m.role === "assistant")];
  const tourJustEnded = lastAssistant?.role === "assistant" && lastAssistant.content.some((c) => c.type === "toolCall");
  if (tourJustEnded) {
    return turn(
      [
        ...heard,
        counted
          ? `The MCP server answered: ${counted.text}`
          : "(No MCP server is configured for this worker, so no MCP step.)",
        "Step 6 of 6 — a session: this run does not end with this answer. It waits for your next prompt, costing no worker, until it is closed or idle for an hour.",
        "Send me a prompt and I will answer it in this same run.",
      ],
      [],
    );
  }
  return turn(
    [
      fresh.length
        ? `You asked ${quote(said)} — a session prompt, answered in the same run as the tour.`
        : "Nothing new to answer.",
      `I am the ${TOUR_LABEL}, so this is all I can say; set JAI_MODEL=provider/modelId and that provider's API key for a real answer.`,
    ],
    [],
  );
}

/** Registers the tour model in this process and returns it; the worker must be told about it (`models`). */
export function registerTourModel(): Model<Api> {
  return registerEndlessModel(
    {
      provider: "demo",
      // One fixed api id in every process: any worker process may make a run's next call (see offline-model.ts).
      api: "jai-demo-tour",
      models: [{ id: "offline-tour", name: TOUR_LABEL, contextWindow: 64000, maxTokens: 2000 }],
      tokensPerSecond: 200,
    },
    (context) => (context.systemPrompt === HELPER_SYSTEM_PROMPT ? helperAnswer(context) : tourAnswer(context)),
  );
}

export interface TourToolsOptions {
  /** Where the Temporal client connects: the steering wait reads the run's state through it. */
  client: Client;
  /** Root of list_dir / read_file (the shipped file tools). */
  workspace: string;
  /** The file the approved note is written to. */
  notePath: string;
  /** Longest the steering wait lasts before the tour goes on without it; default 10 minutes. */
  steeringWaitMs?: number;
}

/** The file tools, the approval-gated note, the steering wait and the helper sub-agent. */
export function createTourTools(options: TourToolsOptions): AgentTool<any>[] {
  const waitMs = options.steeringWaitMs ?? 10 * 60_000;
  const note: AgentTool = {
    name: TOUR_TOOLS.note,
    description: `Writes a short note to ${options.notePath} (asks a person first)`,
    parameters: Type.Object({ text: Type.String() }),
    requiresApproval: true,
    // An approval must not be forgotten in a tour: a person reading the instructions may take a while.
    approvalTimeout: "30m",
    async execute(_id, { text }) {
      await mkdir(path.dirname(options.notePath), { recursive: true });
      await writeFile(options.notePath, `${text}\n`);
      return { content: [{ type: "text", text: `wrote ${Buffer.byteLength(text) + 1} bytes to ${options.notePath}` }] };
    },
  };
  const wait: AgentTool = {
    name: TOUR_TOOLS.wait,
    description: "Waits until a person sends this run a steering message",
    parameters: Type.Object({}),
    // Past the wait itself, so the tool's own limit (a result the model reads) comes first.
    activity: { startToCloseTimeout: waitMs + 60_000 },
    async execute(_id, _args, signal) {
      // A steering message does not stop a running tool (only unstarted ones are skipped), and the run shows
      // it in its state at once: this waits for that, so the next model call is the one that reads it.
      const workflowId = ActivityContext.current().info.workflowExecution?.workflowId;
      if (!workflowId) throw new Error(`${TOUR_TOOLS.wait} runs only as a tool of an agent run`);
      const run = getAgentRun(options.client, workflowId);
      const until = Date.now() + waitMs;
      while (Date.now() < until) {
        if ((await run.state()).queuedSteering > 0)
          return { content: [{ type: "text", text: "a steering message arrived" }] };
        await sleep(300, undefined, { signal });
      }
      return { content: [{ type: "text", text: `no steering message within ${Math.round(waitMs / 1000)} s` }] };
    },
  };
  const helper = agentTool({
    name: TOUR_TOOLS.helper,
    description: "A sub-agent that lists the workspace and reports on it",
    model: TOUR_MODEL,
    systemPrompt: HELPER_SYSTEM_PROMPT,
    tools: ["list_dir"],
    maxTurns: 3,
    maxDepth: 1,
  });
  return [...createFileTools(options.workspace), note, wait, helper];
}

export interface TourGuideOptions {
  workflowId: string;
  /** The run console's URL (token fragment included), where Approve and Steer are buttons. */
  consoleUrl: string;
  /** `--address …` for the printed commands when the CLIs would not find the server on their own. */
  address?: string;
  write?: (text: string) => void;
}

/**
 * What the person is told at each waiting point, from the run's events: the exact commands (this repo's
 * scripts, and the Temporal CLI) and the console. Returns "answered" once a session prompt has been answered.
 */
export function tourGuide(options: TourGuideOptions): (event: AgentEvent) => "answered" | undefined {
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  const id = options.workflowId;
  const at = options.address ? ` --address ${options.address}` : "";
  const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const box = (title: string, lines: string[]) =>
    write(`\n┌─ YOUR TURN: ${title}\n${lines.map((l) => `│  ${l}`).join("\n")}\n└─\n`);
  let ends = 0;
  return (event) => {
    if (event.type === "tool_execution_start" && event.toolName === TOUR_TOOLS.note) {
      const call = event.toolCallId;
      box("approve (or deny) the call — the run waits for you", [
        `click Approve in the console: ${options.consoleUrl}`,
        `or: npm run approve --${at} ${id} ${call}`,
        `    npm run deny --${at} ${id} ${call} --reason "not now"`,
        `or: temporal workflow update execute${at} --workflow-id ${id} --name approve --input ${sh(JSON.stringify(call))}`,
        "Steer only after deciding: a steering message skips a call still waiting for approval.",
      ]);
    } else if (event.type === "tool_execution_start" && event.toolName === TOUR_TOOLS.wait) {
      box("steer the run — any text", [
        `type it in the console's "steer the run…" box: ${options.consoleUrl}`,
        `or: npm run steer --${at} ${id} "look at the tests first"`,
        `or: temporal workflow update execute${at} --workflow-id ${id} --name steer --input ${sh('"look at the tests first"')}`,
      ]);
    } else if (event.type === "agent_end") {
      ends++;
      if (ends === 1) {
        box("send the session a prompt", [
          `type it in the console (its box asks "Ask the agent…" now): ${options.consoleUrl}`,
          `or: npm run prompt --${at} ${id} "what did you just do?"`,
          `or: temporal workflow update execute${at} --workflow-id ${id} --name prompt --input ${sh('"what did you just do?"')}`,
          "The tour closes the session once that prompt is answered (Ctrl-C cancels it).",
        ]);
      } else return "answered";
    }
    return undefined;
  };
}
