/**
 * The agent loop in-process, without a server: `runPrompt` with a RunState and
 * injected effects (a scripted model, tools that answer at once). Event order,
 * steering, follow-ups, max turns, terminate, errors, continue-as-new and resume,
 * as pi-agent-core's loop tests check them. The server suites check what only a
 * server shows (durability, updates, history).
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, type AssistantMessage, type ToolCall } from "@jai/ai";
import type { AgentEvent, AgentMessage } from "../../src/shared/contracts.js";
import type { ExecuteToolOutput, PromptLoopState } from "../../src/shared/wire.js";
import { enter, runPrompt, type LoopEffects } from "../../src/workflows/prompt-loop.js";
import { RunState } from "../../src/workflows/run-state.js";

const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: 1 });
const textOf = (m: AgentMessage) =>
  typeof m.content === "string" ? m.content : m.content.map((c) => ("text" in c ? c.text : "")).join("");

/** A compact trace: event types, with the role and text of messages. */
function trace(events: AgentEvent[]): string[] {
  return events.map((e) => {
    if (e.type === "message_start" || e.type === "message_end")
      return `${e.type}:${e.message.role}:${textOf(e.message)}`;
    if (e.type === "turn_end") return `turn_end:${e.toolResults.length}`;
    return e.type;
  });
}

interface Harness {
  run: RunState;
  events: AgentEvent[];
  /** The context each model call saw. */
  calls: string[][];
  continued: PromptLoopState[];
  effects: LoopEffects;
}

/**
 * `replies[n]` answers model call n (a function may queue steering or follow-ups meanwhile); tools answer
 * `<name> ok` at once (`terminate` when `terminating` says so).
 */
function harness(
  replies: (AssistantMessage | ((run: RunState) => AssistantMessage))[],
  options: { terminating?: (call: ToolCall) => boolean; continueAsNewAt?: number } = {},
): Harness {
  const run = new RunState({ details() {}, searchAttributes() {} });
  const events: AgentEvent[] = [];
  const calls: string[][] = [];
  const continued: PromptLoopState[] = [];
  const emit = (e: AgentEvent) => void events.push(e);
  const effects: LoopEffects = {
    hooks: [],
    emit,
    fitContext: async () => undefined,
    callModel: async () => {
      calls.push(run.context.map(textOf));
      const next = replies[calls.length - 1];
      if (!next) throw new Error(`no reply scripted for call ${calls.length}`);
      return typeof next === "function" ? next(run) : next;
    },
    runTools: async (toolCalls) =>
      toolCalls.map((call) => {
        const output: ExecuteToolOutput = {
          result: {
            content: [{ type: "text", text: `${call.name} ok` }],
            details: {},
            terminate: options.terminating?.(call),
          },
          isError: false,
        };
        const message = {
          role: "toolResult" as const,
          toolCallId: call.id,
          toolName: call.name,
          content: output.result.content,
          isError: false,
          timestamp: 2,
        };
        emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
        emit({
          type: "tool_execution_end",
          toolCallId: call.id,
          toolName: call.name,
          result: output.result,
          isError: false,
        });
        enter(run, [message], emit);
        return { output, message };
      }),
    continueAsNewDue: () => options.continueAsNewAt !== undefined && run.turnsThisRun >= options.continueAsNewAt,
    continueAsNew: async (loop) => void continued.push(loop),
  };
  return { run, events, calls, continued, effects };
}

const toolUse = (...names: string[]) =>
  fauxAssistantMessage(
    names.map((n, i) => fauxToolCall(n, {}, { id: `${n}-${i}` })),
    { stopReason: "toolUse" },
  );

describe("runPrompt in-process", () => {
  it("a prompt answered at once: pi's event order", async () => {
    const h = harness([fauxAssistantMessage("hi")]);
    const outcome = await runPrompt(h.run, [user("hello")], h.effects, 10);
    expect(outcome).toEqual({ stopReason: "stop" });
    expect(trace(h.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user:hello",
      "message_end:user:hello",
      "message_end:assistant:hi",
      "turn_end:0",
      "agent_end",
    ]);
    expect(h.run.transcript.map((m) => m.role)).toEqual(["user", "assistant"]);
    expect(h.run.turn).toBe(1);
  });

  it("tool calls: their results end the turn, the next turn's call sees them, agent_end carries every new message", async () => {
    const h = harness([toolUse("a", "b"), fauxAssistantMessage("done")]);
    await runPrompt(h.run, [user("go")], h.effects, 10);
    expect(trace(h.events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user:go",
      "message_end:user:go",
      "message_end:assistant:",
      "tool_execution_start",
      "tool_execution_end",
      "message_start:toolResult:a ok",
      "message_end:toolResult:a ok",
      "tool_execution_start",
      "tool_execution_end",
      "message_start:toolResult:b ok",
      "message_end:toolResult:b ok",
      "turn_end:2",
      "turn_start",
      "message_end:assistant:done",
      "turn_end:0",
      "agent_end",
    ]);
    expect(h.calls[1]).toEqual(["go", "", "a ok", "b ok"]);
    const end = h.events.at(-1) as Extract<AgentEvent, { type: "agent_end" }>;
    expect(end.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult", "assistant"]);
  });

  it("steering queued during a turn enters before the next model call, with its own message events", async () => {
    const h = harness([
      (run) => (run.steering.push({ role: "user", content: "also this", timestamp: 3 }), toolUse("a")),
      fauxAssistantMessage("ok"),
    ]);
    await runPrompt(h.run, [user("go")], h.effects, 10);
    expect(h.calls[1]).toEqual(["go", "", "a ok", "also this"]);
    const second = trace(h.events).slice(trace(h.events).indexOf("turn_end:1") + 1);
    expect(second).toEqual([
      "turn_start",
      "message_start:user:also this",
      "message_end:user:also this",
      "message_end:assistant:ok",
      "turn_end:0",
      "agent_end",
    ]);
  });

  it("steering after a final answer starts another turn; follow-ups wait until the loop would stop", async () => {
    const h = harness([
      (run) => (
        run.followUps.push({ role: "user", content: "follow", timestamp: 3 }),
        run.steering.push({ role: "user", content: "steer", timestamp: 3 }),
        fauxAssistantMessage("one")
      ),
      fauxAssistantMessage("two"),
      fauxAssistantMessage("three"),
    ]);
    const outcome = await runPrompt(h.run, [user("go")], h.effects, 10);
    expect(outcome.stopReason).toBe("stop");
    expect(h.calls.map((c) => c.at(-1))).toEqual(["go", "steer", "follow"]);
    expect(trace(h.events).filter((t) => t === "agent_start" || t === "agent_end")).toEqual([
      "agent_start",
      "agent_end",
    ]);
  });

  it("max turns: stops before the next call, queued input goes back to the steering queue", async () => {
    const h = harness([
      (run) => (run.steering.push({ role: "user", content: "late", timestamp: 3 }), toolUse("a")),
      toolUse("a"),
    ]);
    const outcome = await runPrompt(h.run, [user("go")], h.effects, 1);
    expect(outcome).toEqual({ stopReason: "max_turns" });
    expect(h.calls).toHaveLength(1);
    expect(h.run.steering.map(textOf)).toEqual(["late"]);
    expect(h.events.at(-1)?.type).toBe("agent_end");
  });

  it("a batch whose every result says terminate ends the loop; one that does not goes on", async () => {
    const all = harness([toolUse("stop", "stop")], { terminating: () => true });
    expect(await runPrompt(all.run, [user("go")], all.effects, 10)).toEqual({ stopReason: "terminate" });
    expect(all.calls).toHaveLength(1);
    const some = harness([toolUse("stop", "other"), fauxAssistantMessage("went on")], {
      terminating: (c) => c.name === "stop",
    });
    expect(await runPrompt(some.run, [user("go")], some.effects, 10)).toEqual({ stopReason: "stop" });
    expect(some.calls).toHaveLength(2);
  });

  it("a model call that failed for good ends the loop with its error; length is kept as the stop reason", async () => {
    const failed = harness([fauxAssistantMessage("", { stopReason: "error", errorMessage: "quota" })]);
    expect(await runPrompt(failed.run, [user("go")], failed.effects, 10)).toEqual({
      stopReason: "error",
      errorMessage: "quota",
    });
    expect(trace(failed.events).slice(-2)).toEqual(["turn_end:0", "agent_end"]);
    const cut = harness([fauxAssistantMessage("trunc", { stopReason: "length" })]);
    expect((await runPrompt(cut.run, [user("go")], cut.effects, 10)).stopReason).toBe("length");
  });

  it("continue-as-new is asked between turns, never before the first; it gets the loop's state", async () => {
    const h = harness([toolUse("a"), toolUse("a"), fauxAssistantMessage("done")], { continueAsNewAt: 1 });
    await runPrompt(h.run, [user("go")], h.effects, 10);
    // Due after every turn from the first on: asked before turns 2 and 3 (the effect returned: the carry did not fit).
    expect(
      h.continued.map((l) => ({
        turns: l.turns,
        moreToolCalls: l.moreToolCalls,
        start: l.start,
        lastStop: l.lastStop,
      })),
    ).toEqual([
      { turns: 1, moreToolCalls: true, start: 0, lastStop: "toolUse" },
      { turns: 2, moreToolCalls: true, start: 0, lastStop: "toolUse" },
    ]);
    expect(h.calls).toHaveLength(3);
  });

  it("a resumed loop (continued run) emits no second agent_start and counts its turns on", async () => {
    const h = harness([fauxAssistantMessage("after")]);
    h.run.add(user("go"));
    const outcome = await runPrompt(h.run, [], h.effects, 2, {
      start: 0,
      turns: 1,
      moreToolCalls: true,
      pending: [],
      lastStop: "toolUse",
    });
    expect(outcome.stopReason).toBe("stop");
    expect(trace(h.events)).toEqual(["turn_start", "message_end:assistant:after", "turn_end:0", "agent_end"]);
    const capped = harness([]);
    expect(
      await runPrompt(capped.run, [], capped.effects, 1, {
        start: 0,
        turns: 1,
        moreToolCalls: true,
        pending: [],
        lastStop: "toolUse",
      }),
    ).toEqual({ stopReason: "max_turns" });
  });
});

describe("runPrompt: the run-feature hooks (features/feature.ts)", () => {
  it("beforeModelCall ends the prompt before the call, with queued input given back", async () => {
    const h = harness([toolUse("a"), fauxAssistantMessage("never")]);
    let asked = 0;
    h.effects.hooks = [
      { beforeModelCall: () => (++asked > 1 ? { stopReason: "budget", errorMessage: "spent" } : undefined) },
    ];
    expect(await runPrompt(h.run, [user("go")], h.effects, 10)).toEqual({
      stopReason: "budget",
      errorMessage: "spent",
    });
    expect(h.calls).toHaveLength(1);
  });

  it("claimed calls do not run as tools; a limit holds the rest; verdicts add results and ask for another turn", async () => {
    const h = harness([toolUse("mine", "a", "b"), fauxAssistantMessage("done")]);
    const seen: { claimed: string[]; unclaimed: string[]; held: string[] }[] = [];
    h.effects.hooks = [
      { limit: () => 1 },
      {
        claim: (calls) => calls.filter((c) => c.name === "mine"),
        afterTools: (turn) => {
          seen.push({
            claimed: turn.claimed.map((c) => c.name),
            unclaimed: turn.unclaimed.map((c) => c.name),
            held: turn.held.map((c) => c.name),
          });
          return seen.length === 1 ? { results: [], again: true } : undefined;
        },
      },
    ];
    expect(await runPrompt(h.run, [user("go")], h.effects, 10)).toEqual({ stopReason: "stop" });
    expect(seen[0]).toEqual({ claimed: ["mine"], unclaimed: ["a", "b"], held: ["b"] });
    // Only "a" ran as a tool: "mine" was claimed, "b" held by the limit.
    expect(h.run.transcript.filter((m) => m.role === "toolResult").map((m) => (m as any).toolName)).toEqual(["a"]);
  });

  it("a feature's end comes before terminate, and what it carries goes with a continue-as-new", async () => {
    const h = harness([toolUse("stop"), toolUse("x"), fauxAssistantMessage("done")], {
      terminating: (c) => c.name === "stop",
      continueAsNewAt: 99,
    });
    h.effects.hooks = [
      {
        afterTools: (turn) =>
          turn.terminate ? { results: [], end: { stopReason: "error", errorMessage: "mine" } } : undefined,
      },
    ];
    expect(await runPrompt(h.run, [user("go")], h.effects, 10)).toEqual({ stopReason: "error", errorMessage: "mine" });

    const c = harness([toolUse("a"), toolUse("b"), fauxAssistantMessage("done")], { continueAsNewAt: 1 });
    c.effects.hooks = [{ carry: () => ({ outputFailures: 2 }) }];
    await runPrompt(c.run, [user("go")], c.effects, 10);
    expect(c.continued[0]).toMatchObject({ turns: 1, outputFailures: 2 });
  });
});
