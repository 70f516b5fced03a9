/**
 * The agent loop as a Temporal workflow. Deterministic: every effect is an
 * activity, every event leaves through the `agent` sink, the transcript lives
 * in workflow state and so in history. People steer it, queue follow-ups,
 * approve tools and send session prompts through updates (see handlers.ts).
 */
import {
  allHandlersFinished,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  proxySinks,
  upsertMemo,
} from "@temporalio/workflow";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { createActivities } from "../activities/index.js";
import type { AgentEvent, AgentMessage, AgentRunInput, AgentRunResult, AgentStopReason, PromptLoopState, RunSetup } from "../types.js";
import { fitContext } from "./context-fit.js";
import { continueAsNewWith, restoreCarry, shouldContinueAsNew } from "./continue-as-new.js";
import type { AgentSinks } from "./definitions.js";
import { installHandlers } from "./handlers.js";
import { validateRunInput } from "./input.js";
import { callModel, CancelledDuringModelCall } from "./model-call.js";
import { RunState, toUserMessage } from "./run-state.js";
import { closeCancelledBatch, runTools } from "./tool-calls.js";

type Activities = ReturnType<typeof createActivities>;

const DEFAULT_MAX_TURNS = 50;
const DEFAULT_IDLE_TIMEOUT = "1h";
/** Patch id of the memo (model, tools, outcome) shown in the Temporal UI. */
export const MEMO_PATCH = "jai-memo-v1";

const { resolveRunSetup } = proxyActivities<Activities>({ startToCloseTimeout: "1m", retry: { maximumAttempts: 5 } });
const { agent } = proxySinks<AgentSinks>();
const emit = (event: AgentEvent) => agent.emit(event);

interface Outcome {
  stopReason: AgentStopReason;
  errorMessage?: string;
}

/** Workflow `agentRun`: one agent run (or session), from prompt to final answer. */
export async function agentRun(input: AgentRunInput): Promise<AgentRunResult> {
  const problem = validateRunInput(input);
  if (problem) throw ApplicationFailure.nonRetryable(`Invalid run input: ${problem}`, "InvalidRunInput");
  const run = new RunState();
  installHandlers(run, input);
  run.publishDetails();
  const carried = input.continued;
  const setup = carried ? carried.setup : await resolveSetup(input);
  // Added after the first release: runs recorded before it have no memo command (see README, "Changing the loop").
  const memo = patched(MEMO_PATCH);
  if (memo) upsertMemo({ model: `${setup.model.provider}/${setup.model.id}`, tools: setup.tools.map((t) => t.name) });

  let prompts: AgentMessage[] = [];
  let resume: PromptLoopState | undefined;
  if (carried) {
    restoreCarry(run, carried);
    resume = carried.loop;
  } else if (Array.isArray(input.prompt)) run.seed(input.prompt);
  else prompts = [toUserMessage(input.prompt)];

  let promptStart = resume?.start ?? run.newMessages.length;
  // A continued session that was waiting for its next prompt goes straight back to waiting.
  let promptDue = !carried || resume !== undefined;
  try {
    for (;;) {
      if (promptDue) {
        const outcome = await runPrompt(input, setup, run, prompts, resume);
        resume = undefined;
        run.stopReason = outcome.stopReason;
        run.errorMessage = outcome.errorMessage;
        answerPrompt(run, promptStart, outcome);
      }
      promptDue = true;
      const next = input.session ? await nextPrompt(input, setup, run) : undefined;
      if (!next) break;
      promptStart = run.newMessages.length;
      prompts = [next];
    }
  } catch (err) {
    if (!isCancellation(err) && !(err instanceof CancelledDuringModelCall)) throw err;
    await CancellationScope.nonCancellable(async () => endCancelled(run, err, promptStart));
  }

  run.phase = "done";
  run.waitingForPrompt = false;
  run.publishDetails();
  if (memo) upsertMemo({ stopReason: run.stopReason, turns: run.turn, totalTokens: run.usage.totalTokens });
  // Non-cancellable: after a cancel request the root scope throws on every new wait.
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  return {
    ...fitMessages(run.newMessages, run.newMessagesOmitted),
    stopReason: run.stopReason!,
    turns: run.turn,
    usage: run.usage,
    ...(run.errorMessage !== undefined ? { errorMessage: run.errorMessage } : {}),
  };
}

/** Results stay far below Temporal's 2 MB payload limit, however long the run. */
const RESULT_BUDGET_BYTES = 1_500_000;

/** All messages when they fit; else the final one and how many were left out (the transcript query has them all). */
export function fitMessages(messages: AgentMessage[], alreadyOmitted = 0): { messages: AgentMessage[]; messagesOmitted?: number } {
  if (JSON.stringify(messages).length <= RESULT_BUDGET_BYTES) return alreadyOmitted ? { messages, messagesOmitted: alreadyOmitted } : { messages };
  return { messages: messages.slice(-1), messagesOmitted: alreadyOmitted + messages.length - 1 };
}

/** The setup activity resolves the model and tools in the worker; its answer is recorded in history. */
async function resolveSetup(input: AgentRunInput): Promise<RunSetup> {
  const label = typeof input.model === "string" ? input.model : `${input.model.provider}/${input.model.id}`;
  try {
    return await resolveRunSetup.executeWithOptions({ summary: `setup · ${label}` }, [{ model: input.model, tools: input.tools }]);
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) throw ApplicationFailure.nonRetryable(cause.message, cause.type ?? "InvalidRunInput");
    throw err;
  }
}

function enter(run: RunState, messages: AgentMessage[]): void {
  for (const message of messages) {
    run.add(message);
    emit({ type: "message_start", message });
    emit({ type: "message_end", message });
  }
}

/**
 * One prompt's agent loop, as pi-agent-core runs it: turns while the model
 * calls tools or steering is queued; then follow-ups, if any, start more turns.
 */
async function runPrompt(input: AgentRunInput, setup: RunSetup, run: RunState, prompts: AgentMessage[], resume?: PromptLoopState): Promise<Outcome> {
  const maxTurns = input.maxTurns ?? DEFAULT_MAX_TURNS;
  const start = resume?.start ?? run.newMessages.length;
  let turns = resume?.turns ?? 0;
  let lastStop: AssistantMessage["stopReason"] = resume?.lastStop ?? "stop";
  let first = !resume;
  let pending: AgentMessage[] = resume?.pending ?? [];
  let moreToolCalls = resume?.moreToolCalls ?? true;
  if (!resume) {
    emit({ type: "agent_start" });
    emit({ type: "turn_start" });
    enter(run, prompts);
    pending = run.steering.splice(0);
  }
  const finish = (outcome: Outcome): Outcome => {
    emit({ type: "agent_end", messages: run.newMessages.slice(start) });
    return outcome;
  };

  for (;;) {
    while (moreToolCalls || pending.length > 0) {
      if (turns >= maxTurns) {
        run.steering.unshift(...(pending as typeof run.steering));
        return finish({ stopReason: "max_turns" });
      }
      if (!first && shouldContinueAsNew(input, run)) await continueAsNewWith(input, setup, run, { start, turns, moreToolCalls, pending, lastStop });
      if (!first) emit({ type: "turn_start" });
      first = false;
      enter(run, pending);
      pending = [];
      turns++;
      run.turn++;
      run.turnsThisRun++;
      run.phase = "streaming";
      run.publishDetails();

      await fitContext(input, setup, run, "budget");
      const message = await callModel(input, setup, run);
      run.add(message);
      emit({ type: "message_end", message });
      if (message.stopReason === "error" || message.stopReason === "aborted") {
        emit({ type: "turn_end", message, toolResults: [] });
        return finish({ stopReason: message.stopReason, errorMessage: message.errorMessage });
      }

      const toolCalls = message.content.filter((c): c is ToolCall => c.type === "toolCall");
      let toolResults: ToolResultMessage[] = [];
      let terminate = false;
      if (toolCalls.length > 0) {
        run.phase = "running_tools";
        run.publishDetails(`${toolCalls.length} tool call${toolCalls.length > 1 ? "s" : ""}`);
        const outcomes = await runTools(input, setup, run, toolCalls, emit);
        toolResults = outcomes.map((o) => o.message);
        terminate = outcomes.every((o) => o.output.result.terminate === true);
      }
      emit({ type: "turn_end", message, toolResults });
      if (terminate) return finish({ stopReason: "terminate" });
      moreToolCalls = toolCalls.length > 0;
      lastStop = message.stopReason;
      pending = run.steering.splice(0);
    }
    pending = run.followUps.splice(0);
    if (pending.length === 0) break;
    moreToolCalls = true;
  }
  return finish({ stopReason: lastStop === "length" ? "length" : "stop" });
}

/** Hands a session prompt its answer: the messages since it was taken up. */
function answerPrompt(run: RunState, start: number, outcome: Outcome): void {
  const waiting = run.prompts.find((p) => p.result === undefined && p.taken);
  if (waiting) waiting.result = { ...fitMessages(run.newMessages.slice(start)), ...outcome };
}

/** Sessions: wait for the next prompt, `close()` or the idle timeout; continue-as-new first when it is time. */
async function nextPrompt(input: AgentRunInput, setup: RunSetup, run: RunState): Promise<AgentMessage | undefined> {
  const idle = typeof input.session === "object" && input.session.idleTimeout !== undefined ? input.session.idleTimeout : DEFAULT_IDLE_TIMEOUT;
  const untaken = () => run.prompts.find((p) => !p.taken);
  if (!run.closed && !untaken() && shouldContinueAsNew(input, run)) await continueAsNewWith(input, setup, run);
  run.waitingForPrompt = true;
  run.phase = "done";
  run.publishDetails();
  const woke = await condition(() => untaken() !== undefined || run.closed, idle);
  run.waitingForPrompt = false;
  const next = untaken();
  if (!woke || !next) return undefined;
  next.taken = true;
  run.stopReason = undefined;
  run.errorMessage = undefined;
  return next.message;
}

/**
 * Cancellation: keep what happened, close the message structure (every tool
 * call of the last assistant message gets a result) and end as "aborted".
 */
function endCancelled(run: RunState, err: unknown, promptStart: number): void {
  if (err instanceof CancelledDuringModelCall && err.partial) {
    run.add(err.partial);
    emit({ type: "message_end", message: err.partial });
    emit({ type: "turn_end", message: err.partial, toolResults: [] });
  }
  const last = [...run.transcript].reverse().find((m): m is AssistantMessage => m.role === "assistant");
  closeCancelledBatch(run, last?.content.filter((c): c is ToolCall => c.type === "toolCall") ?? [], emit);
  run.approvals.clear();
  run.stopReason = "aborted";
  run.errorMessage = "Run cancelled";
  answerPrompt(run, promptStart, { stopReason: "aborted", errorMessage: run.errorMessage });
  for (const queued of run.prompts) queued.result ??= { messages: [], stopReason: "aborted", errorMessage: "Session cancelled before this prompt ran" };
  emit({ type: "agent_end", messages: run.newMessages.slice(promptStart) });
}
