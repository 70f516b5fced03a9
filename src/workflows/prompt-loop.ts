/**
 * One prompt's agent loop, as pi-agent-core runs it: turns while the model
 * calls tools or steering is queued; then follow-ups, if any, start more turns.
 *
 * Free of Temporal: every effect comes in through `LoopEffects`. The workflow
 * (agent-run.ts) passes activities, the sink and continue-as-new; the loop's
 * in-process tests pass plain functions (test/unit/prompt-loop.test.ts).
 */
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { AgentEvent, AgentMessage, AgentStopReason, BudgetLimit } from "../contracts.js";
import type { CheckOutputInput, CheckOutputVerdict, ExecuteToolOutput, PromptLoopState } from "./wire.js";
import type { RunState } from "./run-state.js";
import { toolResultMessage } from "../common/tool-result.js";
import { errorOutput } from "./tool-output.js";
import { ANSWER_ACCEPTED, NOT_ALONE, OUTPUT_TOOL, outputCorrection } from "./output-schema.js";

/** How one prompt's loop ended. */
export interface LoopOutcome {
  stopReason: AgentStopReason;
  errorMessage?: string;
  /** Typed output: the validated final answer (stopReason "stop"). */
  output?: unknown;
  /** stopReason "budget": the limit that ended it. */
  budgetExceeded?: BudgetLimit;
}

/** A run's budget (its input's `budget`, docs/budgets.md): what the loop asks before spending. */
export interface BudgetEffects {
  /** Before a model call: the limit the call could pass (what is spent plus the most it may cost), with why. */
  beforeCall(): { limit: BudgetLimit; why: string } | undefined;
  /** A batch of `n` tool calls: how many of them, from the first, may run. */
  allowToolCalls(n: number): number;
  /** Why calls past `maxToolCalls` were not run (their error result, and the run's errorMessage). */
  toolCallsRefused(): string;
}

/** Typed results (the run's `output`, docs/typed-results.md): how final answers are checked. */
export interface OutputEffects {
  /** Invalid final answers the model may correct; one more ends the prompt with stopReason "error". */
  retries: number;
  /** Checks one candidate (the final tool's arguments, or an answer's text) against the schema. */
  check(candidate: CheckOutputInput["candidate"]): Promise<CheckOutputVerdict>;
}

/** What the loop does to the world; everything else it does to `RunState`. */
export interface LoopEffects {
  /** Sends one event to whoever listens (the workflow: the `agent` sink). */
  emit(event: AgentEvent): void;
  /** Brings the model's context under its budget before a call (may compact): a promise only when it has work to do. */
  fitContext(): Promise<unknown> | false;
  /** One model call. Contract: a call that fails for good comes back as a message with stopReason "error". */
  callModel(): Promise<AssistantMessage>;
  /**
   * One batch of tool calls. Contract: every call ends with a result, entered
   * into the run's transcript in the order the model asked for them; the
   * results come back in that order.
   */
  runTools(calls: ToolCall[]): Promise<{ output: ExecuteToolOutput; message: ToolResultMessage }[]>;
  /** Whether it is time to continue as new (asked between turns). */
  continueAsNewDue(): boolean;
  /** Continues as new carrying `loop`. Contract: returns only when that could not happen (the loop then goes on here). */
  continueAsNew(loop: PromptLoopState): Promise<void>;
  /** Typed output; absent when the run has none (the loop is then exactly pi-agent-core's). */
  output?: OutputEffects;
  /** The run's budget; absent when it has none. */
  budget?: BudgetEffects;
}

/** Messages enter the transcript with their start and end events. */
export function enter(state: RunState, messages: AgentMessage[], emit: (event: AgentEvent) => void): void {
  for (const message of messages) {
    state.add(message);
    emit({ type: "message_start", message });
    emit({ type: "message_end", message });
  }
}

/** Runs one prompt (`prompts` enter first) to its end, or resumes a loop a continued run carried (`resume`). */
export async function runPrompt(
  state: RunState,
  prompts: AgentMessage[],
  effects: LoopEffects,
  maxTurns: number,
  resume?: PromptLoopState,
): Promise<LoopOutcome> {
  const { emit } = effects;
  const start = resume?.start ?? state.conversation.newMessages.length;
  let turns = resume?.turns ?? 0;
  let lastStop: AssistantMessage["stopReason"] = resume?.lastStop ?? "stop";
  let first = !resume;
  let moreToolCalls = resume?.moreToolCalls ?? true;
  let outputFailures = resume?.outputFailures ?? 0;
  // A resumed loop's agent_start was emitted by the run it continued from.
  state.loopStarted(resume !== undefined);
  if (!resume) {
    emit({ type: "agent_start" });
    emit({ type: "turn_start" });
    enter(state, prompts, emit);
    state.inbox.takeSteering();
  }
  const finish = (outcome: LoopOutcome): LoopOutcome => {
    state.loopEnded();
    emit({ type: "agent_end", messages: state.conversation.newMessages.slice(start) });
    return outcome;
  };

  for (;;) {
    while (moreToolCalls || state.inbox.pendingInput.length > 0) {
      if (turns >= maxTurns) {
        state.inbox.returnPendingInput();
        return finish({ stopReason: "max_turns" });
      }
      const over = effects.budget?.beforeCall();
      if (over) {
        state.inbox.returnPendingInput();
        return finish({ stopReason: "budget", budgetExceeded: over.limit, errorMessage: over.why });
      }
      if (!first && effects.continueAsNewDue()) {
        const prompt = state.inbox.currentPrompt;
        await effects.continueAsNew({
          start,
          turns,
          moreToolCalls,
          pending: [],
          lastStop,
          ...(prompt ? { promptId: prompt.id, promptStart: prompt.start } : {}),
          ...(outputFailures > 0 ? { outputFailures } : {}),
        });
      }
      if (!first) emit({ type: "turn_start" });
      first = false;
      enter(state, state.inbox.takePendingInput(), emit);
      turns++;
      state.startTurn();

      // Awaited only when there is something to wait for: a workflow replays every promise it made.
      const fitting = effects.fitContext();
      if (fitting) await fitting;
      const message = await effects.callModel();
      state.add(message);
      emit({ type: "message_end", message });
      if (message.stopReason === "error" || message.stopReason === "aborted") {
        emit({ type: "turn_end", message, toolResults: [] });
        return finish({ stopReason: message.stopReason, errorMessage: message.errorMessage });
      }

      const toolCalls = message.content.filter((c): c is ToolCall => c.type === "toolCall");
      // Typed output: final-tool calls are the loop's to judge; the other calls run as tools.
      const { output } = effects;
      const finals = output ? toolCalls.filter((c) => c.name === OUTPUT_TOOL) : [];
      const calls = finals.length > 0 ? toolCalls.filter((c) => c.name !== OUTPUT_TOOL) : toolCalls;
      let toolResults: ToolResultMessage[] = [];
      let terminate = false;
      // Calls past the budget's maxToolCalls are not run: each gets an error result, after those that ran.
      const allowed = effects.budget ? effects.budget.allowToolCalls(calls.length) : calls.length;
      const runnable = allowed < calls.length ? calls.slice(0, allowed) : calls;
      if (runnable.length > 0) {
        state.setPhase("running_tools", `${runnable.length} tool call${runnable.length > 1 ? "s" : ""}`);
        const outcomes = await effects.runTools(runnable);
        toolResults = outcomes.map((o) => o.message);
        terminate = outcomes.every((o) => o.output.result.terminate === true);
      }
      const refused = allowed < calls.length ? refuseCalls(state, effects, calls.slice(allowed)) : [];
      toolResults = refused.length > 0 ? [...toolResults, ...refused] : toolResults;
      const judged =
        output && (finals.length > 0 || toolCalls.length === 0)
          ? await judgeAnswer(state, effects, output, message, finals, calls.length > 0)
          : undefined;
      if (judged) toolResults = [...toolResults, ...judged.results];
      emit({ type: "turn_end", message, toolResults });
      if (refused.length > 0)
        return finish({
          stopReason: "budget",
          budgetExceeded: "maxToolCalls",
          errorMessage: effects.budget!.toolCallsRefused(),
        });
      if (terminate) return finish({ stopReason: "terminate" });
      if (judged) {
        const { verdict } = judged;
        if (verdict.ok) return finish({ stopReason: "stop", output: verdict.output });
        outputFailures++;
        if (verdict.fatal || outputFailures > output!.retries) {
          const why = verdict.fatal
            ? verdict.error
            : `no valid final answer after ${outputFailures} attempt${outputFailures > 1 ? "s" : ""}; the last: ${verdict.error}`;
          return finish({ stopReason: "error", errorMessage: `Typed output: ${why}` });
        }
        // The model has the error (a tool result, or a user message): another turn.
        moreToolCalls = true;
        lastStop = message.stopReason;
        state.inbox.takeSteering();
        continue;
      }
      moreToolCalls = toolCalls.length > 0;
      lastStop = message.stopReason;
      state.inbox.takeSteering();
    }
    if (!state.inbox.takeFollowUps()) break;
    moreToolCalls = true;
  }
  return finish({ stopReason: lastStop === "length" ? "length" : "stop" });
}

/** Tool calls the budget does not let run: each gets an error result (with its events), in the model's order. */
function refuseCalls(state: RunState, effects: LoopEffects, calls: ToolCall[]): ToolResultMessage[] {
  const { emit } = effects;
  const out = errorOutput(effects.budget!.toolCallsRefused());
  return calls.map((call) => {
    emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
    emit({ type: "tool_execution_end", toolCallId: call.id, toolName: call.name, result: out.result, isError: true });
    const result = toolResultMessage(call.id, call.name, out, Date.now());
    enter(state, [result], emit);
    return result;
  });
}

/** The text of an assistant message (its text blocks, joined). */
const textOf = (message: AssistantMessage) =>
  message.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");

/**
 * Typed output: judges this turn's final answer, its final-tool calls or, when it called no tool, its text.
 * Every final-tool call gets its result (the error, or "Answer accepted."), with its tool_execution events;
 * a text answer that fails gets a user message naming the error. Both enter the transcript before turn_end.
 */
async function judgeAnswer(
  state: RunState,
  effects: LoopEffects,
  output: OutputEffects,
  message: AssistantMessage,
  finals: ToolCall[],
  othersRan: boolean,
): Promise<{ verdict: CheckOutputVerdict; results: ToolResultMessage[] }> {
  const { emit } = effects;
  if (finals.length === 0) {
    const verdict = await output.check({ text: textOf(message) });
    if (!verdict.ok && !verdict.fatal)
      enter(state, [{ role: "user", content: outputCorrection(verdict.error), timestamp: Date.now() }], emit);
    return { verdict, results: [] };
  }
  for (const call of finals)
    emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
  const verdict: CheckOutputVerdict =
    finals.length > 1 || othersRan
      ? { ok: false, error: NOT_ALONE }
      : await output.check({ args: finals[0].arguments });
  const results = finals.map((call) => {
    const out: ExecuteToolOutput = verdict.ok
      ? { result: { content: [{ type: "text", text: ANSWER_ACCEPTED }], details: {} }, isError: false }
      : errorOutput(verdict.error);
    emit({
      type: "tool_execution_end",
      toolCallId: call.id,
      toolName: call.name,
      result: out.result,
      isError: out.isError,
    });
    const result = toolResultMessage(call.id, call.name, out, Date.now());
    enter(state, [result], emit);
    return result;
  });
  return { verdict, results };
}
