/**
 * One prompt's agent loop, as pi-agent-core runs it: turns while the model
 * calls tools or steering is queued; then follow-ups, if any, start more turns.
 *
 * Free of Temporal: every effect comes in through `LoopEffects`. The workflow
 * (agent-run.ts) passes activities, the sink and continue-as-new; the loop's
 * in-process tests pass plain functions (test/unit/prompt-loop.test.ts).
 */
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { AgentEvent, AgentMessage, AgentStopReason } from "../contracts.js";
import type { ExecuteToolOutput, PromptLoopState } from "./wire.js";
import type { RunState } from "./run-state.js";

/** How one prompt's loop ended. */
export interface LoopOutcome {
  stopReason: AgentStopReason;
  errorMessage?: string;
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
      if (!first && effects.continueAsNewDue()) {
        const prompt = state.inbox.currentPrompt;
        await effects.continueAsNew({
          start,
          turns,
          moreToolCalls,
          pending: [],
          lastStop,
          ...(prompt ? { promptId: prompt.id, promptStart: prompt.start } : {}),
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
      let toolResults: ToolResultMessage[] = [];
      let terminate = false;
      if (toolCalls.length > 0) {
        state.setPhase("running_tools", `${toolCalls.length} tool call${toolCalls.length > 1 ? "s" : ""}`);
        const outcomes = await effects.runTools(toolCalls);
        toolResults = outcomes.map((o) => o.message);
        terminate = outcomes.every((o) => o.output.result.terminate === true);
      }
      emit({ type: "turn_end", message, toolResults });
      if (terminate) return finish({ stopReason: "terminate" });
      moreToolCalls = toolCalls.length > 0;
      lastStop = message.stopReason;
      state.inbox.takeSteering();
    }
    if (!state.inbox.takeFollowUps()) break;
    moreToolCalls = true;
  }
  return finish({ stopReason: lastStop === "length" ? "length" : "stop" });
}
