/**
 * One prompt's agent loop, as pi-agent-core runs it: turns while the model
 * calls tools or steering is queued; then follow-ups, if any, start more turns.
 *
 * Free of Temporal: every effect comes in through `LoopEffects`. The workflow
 * (agent-run.ts) passes activities, the sink and continue-as-new; the loop's
 * in-process tests pass plain functions (test/unit/prompt-loop.test.ts).
 */
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { AgentEvent, AgentMessage } from "../shared/contracts.js";
import type { ExecuteToolOutput, PromptLoopState } from "../shared/wire.js";
import type { RunState } from "./run-state.js";
import type { LoopOutcome, TurnHooks, TurnVerdict } from "./features/feature.js";
import { toolResultMessage } from "../shared/tool-result.js";

export type { LoopOutcome } from "./features/feature.js";

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
  /** The run features' hooks for this prompt (features/feature.ts), in list order; none: the loop is pi-agent-core's. */
  hooks: TurnHooks[];
}

/** Messages enter the transcript with their start and end events. */
export function enter(state: RunState, messages: AgentMessage[], emit: (event: AgentEvent) => void): void {
  for (const message of messages) {
    state.add(message);
    emit({ type: "message_start", message });
    emit({ type: "message_end", message });
  }
}

/** A call's `tool_execution_end` (its keys in this order: an event's id digests its JSON). */
export const toolEnd = (call: ToolCall, out: ExecuteToolOutput): AgentEvent => ({
  type: "tool_execution_end",
  toolCallId: call.id,
  toolName: call.name,
  result: out.result,
  isError: out.isError,
});

/**
 * A call the loop (or a feature) answers itself, not a tool: its `tool_execution_end`, then its result message
 * enters the transcript with its events. Its `tool_execution_start` is the caller's to emit, before.
 */
export function endCall(
  state: RunState,
  call: ToolCall,
  out: ExecuteToolOutput,
  emit: (event: AgentEvent) => void,
): ToolResultMessage {
  emit(toolEnd(call, out));
  const result = toolResultMessage(call.id, call.name, out, Date.now());
  enter(state, [result], emit);
  return result;
}

/** Runs one prompt (`prompts` enter first) to its end, or resumes a loop a continued run carried (`resume`). */
export async function runPrompt(
  state: RunState,
  prompts: AgentMessage[],
  effects: LoopEffects,
  maxTurns: number,
  resume?: PromptLoopState,
): Promise<LoopOutcome> {
  const { emit, hooks } = effects;
  const start = resume?.start ?? state.conversation.newMessages.length;
  let turns = resume?.turns ?? 0;
  let lastStop: AssistantMessage["stopReason"] = resume?.lastStop ?? "stop";
  let first = !resume;
  let moreToolCalls = resume?.moreToolCalls ?? true;
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
      const over =
        turns >= maxTurns ? { stopReason: "max_turns" as const } : firstOf(hooks, (h) => h.beforeModelCall?.());
      if (over) {
        state.inbox.returnPendingInput();
        return finish(over);
      }
      if (!first && effects.continueAsNewDue()) {
        const prompt = state.inbox.currentPrompt;
        await effects.continueAsNew(
          Object.assign(
            { start, turns, moreToolCalls, pending: [], lastStop },
            prompt ? { promptId: prompt.id, promptStart: prompt.start } : {},
            ...hooks.map((h) => h.carry?.()),
          ),
        );
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

      const calls = message.content.filter((c): c is ToolCall => c.type === "toolCall");
      const turn = await runTurn(state, effects, message, calls);
      emit({ type: "turn_end", message, toolResults: turn.results });
      if (turn.end) return finish(turn.end);
      moreToolCalls = calls.length > 0 || turn.again;
      lastStop = message.stopReason;
      state.inbox.takeSteering();
    }
    if (!state.inbox.takeFollowUps()) break;
    moreToolCalls = true;
  }
  return finish({ stopReason: lastStop === "length" ? "length" : "stop" });
}

/** The first answer a hook gives, in list order. */
function firstOf<T>(hooks: TurnHooks[], ask: (hooks: TurnHooks) => T | undefined): T | undefined {
  for (const h of hooks) {
    const answer = ask(h);
    if (answer !== undefined) return answer;
  }
  return undefined;
}

/**
 * One turn's tool calls: features claim theirs and may limit the rest, those left run as tools, then each
 * feature adds its results and its say. A feature's end comes first, then `terminate` (every call that ran asked
 * to end the run), then another turn when a feature wants one.
 */
async function runTurn(
  state: RunState,
  effects: LoopEffects,
  message: AssistantMessage,
  calls: ToolCall[],
): Promise<{ results: ToolResultMessage[]; end?: LoopOutcome; again: boolean }> {
  const { hooks, emit } = effects;
  const claims = hooks.map((h) => h.claim?.(calls) ?? []);
  const claimed = new Set(claims.flat());
  const unclaimed = claimed.size > 0 ? calls.filter((c) => !claimed.has(c)) : calls;
  const allowed = hooks.reduce((n, h) => Math.min(n, h.limit?.(unclaimed) ?? n), unclaimed.length);
  const runnable = allowed < unclaimed.length ? unclaimed.slice(0, allowed) : unclaimed;
  let results: ToolResultMessage[] = [];
  let terminate = false;
  if (runnable.length > 0) {
    state.setPhase("running_tools", `${runnable.length} tool call${runnable.length > 1 ? "s" : ""}`);
    const outcomes = await effects.runTools(runnable);
    results = outcomes.map((o) => o.message);
    terminate = outcomes.every((o) => o.output.result.terminate === true);
  }
  const held = unclaimed.slice(allowed);
  const verdicts: TurnVerdict[] = [];
  for (const [i, h] of hooks.entries()) {
    const verdict = await h.afterTools?.({ message, calls, claimed: claims[i], unclaimed, held, terminate, emit });
    if (verdict) verdicts.push(verdict);
  }
  results = [...results, ...verdicts.flatMap((v) => v.results)];
  const end = verdicts.find((v) => v.end)?.end ?? (terminate ? { stopReason: "terminate" as const } : undefined);
  return { results, end, again: verdicts.some((v) => v.again) };
}
