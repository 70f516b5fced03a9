/**
 * The agent loop as a Temporal workflow. Deterministic: every effect is an
 * activity, every event leaves through the `agent` sink, the transcript lives
 * in workflow state and so in history. People steer it, queue follow-ups,
 * approve tools and send session prompts through updates (see handlers.ts).
 * The loop's steps are in prompt-loop.ts (free of Temporal); this file gives
 * them their effects (activities: activities.ts) and runs prompts and sessions.
 *
 * A map of one turn, and what each step records in history (the whole cost):
 *
 *   1. steering taken up       nothing new: the update that queued it was recorded when accepted
 *   2. fitContext              nothing, or one `compactContext` activity (compaction: "worker")
 *   3. callModel               one `streamAssistantMessage` activity (model-call.ts):
 *                                input  = model, system prompt, tool schemas, and the context as a
 *                                         delta: messages new since the last call, tool results by
 *                                         reference to their activity (and, when the new messages are
 *                                         too big, user messages by reference to the update that sent
 *                                         them), a digest of the whole (context-ref.ts)
 *                                output = the assistant message, once
 *   4. runTools                per tool call (tool-calls.ts, scheduled by tool-batch.ts):
 *                                an approval predicate: one `prepareToolCall` activity
 *                                an approval: the `approve`/`deny` update (accepted + completed events)
 *                                the call: one `executeTool` activity, input = name + args,
 *                                          output = the capped result (worker/activities/result-limits.ts), once
 *   5. between turns           continue-as-new when due (continue-as-new.ts): the carry is the next run's input
 *
 * plus three workflow-task events per step that waits. So every message enters
 * history once, and a turn costs the same at turn 10 as at turn 200.
 */
import {
  allHandlersFinished,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
} from "@temporalio/workflow";
import type { AssistantMessage, ToolCall } from "@jai/ai";
import {
  agentSearchAttributesExist,
  resolveRunSetup,
  resolveRunSetupLocally,
  resolveRunSetupOnAnyWorker,
} from "./activity-proxies.js";
import { FailureType } from "../shared/failure-types.js";
import type { AgentMessage, AgentRunInput, AgentRunResult } from "../shared/contracts.js";
import type { AgentRunWorkflowInput, ContinuedRun, PromptLoopState, RunSetup } from "../shared/wire.js";
import type { RunContext } from "./run-context.js";
import { fitContext } from "./context-fit.js";
import { continueAsNewWith, shouldContinueAsNew } from "./continue-as-new.js";
import { AGENT_RUN_FAILED } from "../shared/definitions.js";
import { emit } from "./event-sink.js";
import { RUN_FEATURES, type ActiveFeature, type RunFeature, type TurnHooks } from "./features/index.js";
import { installHandlers } from "./handlers.js";
import { unknownFieldProblem, validateRunInput } from "../shared/run-input.js";
import { callModel, CancelledDuringModelCall } from "./model-call.js";
import { metrics } from "./metrics-sink.js";
import { promptSummary } from "../shared/summary.js";
import { AgentStatus } from "../shared/search-attributes.js";
import { fitMessages, RunState, toUserMessage } from "./run-state.js";
import { closeCancelledBatch, runTools } from "./tool-calls.js";
import {
  FAILED_STATUS_PATCH,
  LOCAL_ACTIVITIES_PATCH,
  MEMO_PATCH,
  REFUSED_STATUS_PATCH,
  SEARCH_ATTRIBUTES_PATCH,
  SETUP_ANY_WORKER_PATCH,
  UNKNOWN_FIELDS_PATCH,
  baseline,
  hasChange,
  startBaseline,
} from "./patches.js";
import { runPrompt, type LoopEffects } from "./prompt-loop.js";
import { setupRequest } from "../shared/model-ref.js";
import { withCompletionWebhook } from "./webhook.js";

const DEFAULT_MAX_TURNS = 50;
const DEFAULT_IDLE_TIMEOUT = "1h";

/** Workflow `agentRun`: one agent run (or session), from prompt to final answer. */
export async function agentRun(input: AgentRunWorkflowInput): Promise<AgentRunResult> {
  return withCompletionWebhook(input, () => runAgent(input));
}

async function runAgent(input: AgentRunWorkflowInput): Promise<AgentRunResult> {
  // Before any command: a run started now asks one patch for every change (see BASELINE_PATCH).
  startBaseline();
  // The prompt's time, read in the first activation: after the setup (a local activity) the workflow's clock is
  // the next workflow task's start when it runs, but the local activity's recorded end when it replays (a run
  // whose first workflow task timed out saw 14.349 where its history replays 14.301): the model would have seen
  // a context other than the one history holds (found by the soak, #43).
  const promptAt = Date.now();
  const state = new RunState();
  // Each feature asks its patch here, in list order (features/index.ts).
  const opened = RUN_FEATURES.map((f) => ({ feature: f, active: f.open(input) }));
  const features = opened.flatMap((o) => (o.active ? [o.active] : []));
  const problem = inputProblem(input, opened);
  if (problem) await refuse(`Invalid run input: ${problem}`, FailureType.InvalidRunInput);
  const carried = input.continued;
  // Before the handlers: updates that arrived with the first task are validated against the carried state.
  if (carried) state.fromCarry(carried, workflowInfo().continuedFromExecutionRunId);
  state.useFeatures(features);
  for (const f of features) f.start?.(state, input);
  installHandlers(state, input);
  state.publishDetails();
  let started: Started | undefined;
  let promptStart = 0;
  try {
    const setup = await runSetup(input, features);
    started = announce(input, setup, state);
    const run: RunContext = {
      input,
      setup,
      state,
      features,
      featureTools: features.flatMap((f) => f.modelTools ?? []),
    };
    let prompts: AgentMessage[] = [];
    let resume: PromptLoopState | undefined;
    if (carried) resume = carried.loop;
    else if (Array.isArray(input.prompt)) state.conversation.seed(input.prompt);
    else prompts = [toUserMessage(input.prompt, promptAt)];
    // The prompt is in the run's input: a call too big to carry it inline refers to it there.
    if (!carried)
      (Array.isArray(input.prompt) ? input.prompt : prompts).forEach((m, i) =>
        state.conversation.noteInput(m, `prompt:${i}`),
      );
    promptStart = resume?.start ?? state.conversation.newMessages.length;
    // A continued session that was waiting for its next prompt goes straight back to waiting.
    let promptDue = !carried || resume !== undefined;
    let ended: string;
    for (;;) {
      if (promptDue) {
        const hooks = features.flatMap((f) => (f.turns ? [f.turns(run, resume)] : []));
        const effects = workflowEffects(run, hooks);
        state.promptEnded(await runPrompt(state, prompts, effects, input.maxTurns ?? DEFAULT_MAX_TURNS, resume));
        resume = undefined;
        for (const f of features) f.promptEnded?.(state);
      }
      promptDue = true;
      if (!input.session || features.some((f) => f.endsSession?.(state))) {
        ended = `run ended: ${state.stopReason}`;
        break;
      }
      const next = await nextPrompt(run);
      if ("ended" in next) {
        ended = next.ended;
        break;
      }
      promptStart = state.conversation.newMessages.length;
      prompts = [next.message];
    }
    state.inbox.dropQueued(ended);
  } catch (err) {
    if (err instanceof SetupFailed) {
      state.setupFailed(err.message);
      emit({ type: "agent_start" });
      emit({ type: "agent_end", messages: [] });
    } else {
      if (!isCancellation(err) && !(err instanceof CancelledDuringModelCall)) throw err;
      await CancellationScope.nonCancellable(async () => endCancelled(state, err, promptStart));
    }
  }
  return finish(state, carried, started);
}

/** What runAgent opened of each feature: checked against the input as the run was recorded. */
function inputProblem(
  input: AgentRunWorkflowInput,
  opened: { feature: RunFeature; active: ActiveFeature | undefined }[],
): string | undefined {
  // Fields of a feature the run does not use are unknown to it, as they were to runs recorded before the feature.
  // Unknown fields behind a patch asked only when there is one: runs recorded before accepted them. A continued
  // run's input is its chain's first input, accepted then (with the fields the loop adds).
  const unknownToo = opened.flatMap((o) => (o.active ? (o.active.unknownFields ?? []) : o.feature.fields));
  const unknown = input.continued ? undefined : unknownFieldProblem(input, [], unknownToo);
  const off = new Set(opened.filter((o) => !o.active).map((o) => o.feature.name));
  return (
    validateRunInput(input, { unknownFields: false, off }) ??
    (unknown && hasChange(UNKNOWN_FIELDS_PATCH) ? unknown : undefined)
  );
}

/** The run's setup: resolved once per chain (a continued run carries it), with what its features add. */
async function runSetup(input: AgentRunWorkflowInput, features: ActiveFeature[]): Promise<RunSetup> {
  let setup = input.continued ? input.continued.setup : await resolveSetup(input);
  for (const f of features) {
    const next = f.setup?.(setup, input) ?? setup;
    if (typeof next === "string") await refuse(`Invalid run input: ${next}`, FailureType.InvalidRunInput);
    else setup = next;
  }
  return setup;
}

/** What the run's end reports: its model, and whether it writes a memo. */
interface Started {
  modelLabel: string;
  memo: boolean;
}

/** A run with its setup shows itself: route, memo, metrics, search attributes. */
function announce(input: AgentRunWorkflowInput, setup: RunSetup, state: RunState): Started {
  const carried = input.continued;
  // A setup another worker of the queue answered: that worker serves the model (recorded, so replays agree).
  if (!carried && setup.taskQueue) state.route.setUpBy(setup.taskQueue);
  state.useBlobStore(setup.blobStore);
  const modelLabel = `${setup.model.provider}/${setup.model.id}`;
  const tools = setup.tools.map((t) => t.name);
  // Added after the first release: runs recorded before it have no memo command (see README, "Changing the loop").
  // Since baseline v3 only where the namespace lacks the search attributes, which carry the same model, tools and outcome.
  const memo = hasChange(MEMO_PATCH) && !(setup.searchAttributes && baseline() >= 3);
  if (memo) upsertMemo({ model: modelLabel, tools });
  if (!carried) metrics.runStarted(modelLabel);
  // Only when the namespace has them (the setup activity looked); patched so runs recorded before replay.
  if (setup.searchAttributes && hasChange(SEARCH_ATTRIBUTES_PATCH)) {
    // The summary is the first prompt's line: not for a continued run (its input has no prompt), nor in plain text when encrypted.
    const summary = carried || setup.private ? "" : promptSummary(input.prompt);
    // One upsert for all of them since baseline v2; runs recorded before it upserted twice.
    state.enableSearchAttributes(modelLabel, tools, summary, baseline() >= 2);
  }
  return { modelLabel, memo };
}

/** The run ends: its memo and metrics, callers given their answers, and its result (or its failure, telling the truth). */
async function finish(state: RunState, carried: ContinuedRun | undefined, started: Started | undefined) {
  // A session continued as new while idle and closed before another prompt: it ends as its last prompt did.
  state.finished(carried?.stopReason);
  const { conversation, inbox } = state;
  if (started?.memo)
    upsertMemo({ stopReason: state.stopReason, turns: state.turn, totalTokens: conversation.usage.totalTokens });
  await CancellationScope.nonCancellable(async () => {
    // Callers handed over by a continue-as-new come back for their answers: give them a moment before the run closes.
    if (inbox.answers.length > 0) await condition(() => inbox.answers.length === 0, ANSWER_PICKUP);
    // After a cancel request the root scope throws on every new wait: hence non-cancellable.
    await condition(allHandlersFinished);
  });
  if (started) metrics.runEnded(started.modelLabel, state.stopReason!);
  const result: AgentRunResult = {
    ...fitMessages(conversation.newMessages, conversation.newMessagesOmitted, state.resultMessageBytes),
    stopReason: state.stopReason!,
    turns: state.turn,
    usage: conversation.usage,
    ...(state.errorMessage !== undefined ? { errorMessage: state.errorMessage } : {}),
    ...(inbox.dropped.length > 0 ? { dropped: inbox.dropped } : {}),
    ...state.featureFields("result"),
  };
  // The run's status tells the truth: Failed in the UI, in Temporal's metrics and alerts. The result travels in the
  // failure's details and handle.result() returns it as before. Patched: earlier "error" runs completed.
  if (result.stopReason === "error" && hasChange(FAILED_STATUS_PATCH)) {
    throw ApplicationFailure.create({
      type: AGENT_RUN_FAILED,
      message: result.errorMessage ?? "The agent run ended with an error",
      nonRetryable: true,
      details: [result],
    });
  }
  return result;
}

/** How long a finished session waits for callers handed over by continue-as-new to collect their answers. */
const ANSWER_PICKUP = "30s";

/** The run cannot start its loop: its events still open and close, and it fails with a typed, non-retryable error. */
function failBeforeLoop(message: string, type: string): never {
  emit({ type: "agent_start" });
  emit({ type: "agent_end", messages: [] });
  throw ApplicationFailure.nonRetryable(message, type);
}

/**
 * The run is refused (bad input, or a setup that refuses it): like `failBeforeLoop`, and operators searching by
 * AgentStatus find it failed. Patched: runs refused before this change upserted nothing.
 */
async function refuse(message: string, type: string): Promise<never> {
  if (hasChange(REFUSED_STATUS_PATCH) && (await searchAttributesExist()))
    upsertSearchAttributes([{ key: AgentStatus, value: "failed" }]);
  return failBeforeLoop(message, type);
}

/** Whether the namespace has the agent search attributes, asked in the worker (no setup tells a refused run). */
async function searchAttributesExist(): Promise<boolean> {
  try {
    return await agentSearchAttributesExist.executeWithOptions({ summary: "search attributes?" }, []);
  } catch (err) {
    // Unknown is as good as absent: upserting attributes the namespace lacks would fail the workflow task.
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    return false;
  }
}

/** The setup activity failed for good (not bad input): the run ends with stopReason "error". */
class SetupFailed extends Error {}

/** The setup activity resolves the model and tools in the worker; its answer is recorded in history. */
async function resolveSetup(input: AgentRunInput): Promise<RunSetup> {
  const { args, label } = setupRequest(input.model, input.tools);
  try {
    const setup = hasChange(LOCAL_ACTIVITIES_PATCH) ? resolveRunSetupLocally : resolveRunSetup;
    return await setup.executeWithOptions({ summary: `setup · ${label}` }, [args]).catch((err: unknown) => {
      // This worker lacks the run's model: any worker of the queue may have it (retried a while, see activities.ts).
      // A local activity's failure may arrive as its cause alone.
      const failure = err instanceof ActivityFailure ? err.cause : err;
      const notServed = failure instanceof ApplicationFailure && failure.type === FailureType.ModelNotServed;
      if (!notServed || !hasChange(SETUP_ANY_WORKER_PATCH)) throw err;
      return resolveRunSetupOnAnyWorker.executeWithOptions({ summary: `setup · ${label} · any worker` }, [args]);
    });
  } catch (err) {
    if (isCancellation(err) || CancellationScope.current().consideredCancelled) throw err;
    // A local activity's failure may arrive as its cause alone.
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.nonRetryable)
      return refuse(cause.message, cause.type ?? FailureType.InvalidRunInput);
    if (!(err instanceof ActivityFailure)) throw err;
    throw new SetupFailed(`Setup failed: ${err.cause?.message ?? err.message}`);
  }
}

/** The loop's effects in a workflow: activities, the sink, continue-as-new; and the run features' hooks. */
function workflowEffects(run: RunContext, hooks: TurnHooks[]): LoopEffects {
  return {
    emit,
    fitContext: () => fitContext(run, "estimate"),
    callModel: () => callModel(run),
    runTools: (calls) => runTools(run, calls, emit),
    continueAsNewDue: () => shouldContinueAsNew(run.input, run.state),
    continueAsNew: (loop) => continueAsNewWith(run, loop),
    hooks,
  };
}

/** Sessions: wait for the next prompt, `close()` or the idle timeout; continue-as-new first when it is time. */
async function nextPrompt(run: RunContext): Promise<{ message: AgentMessage } | { ended: string }> {
  const { input, state } = run;
  const idle =
    typeof input.session === "object" && input.session.idleTimeout !== undefined
      ? input.session.idleTimeout
      : DEFAULT_IDLE_TIMEOUT;
  if (!state.inbox.closed && shouldContinueAsNew(input, state)) await continueAsNewWith(run);
  state.waitForPrompt();
  const woke = await condition(() => state.inbox.prompts.length > 0 || state.inbox.closed, idle);
  const message = state.takePrompt();
  if (!message) return { ended: woke ? "session closed" : `session idle for ${idle}` };
  return { message };
}

/**
 * Cancellation: keep what happened, close the message structure (every tool
 * call of the last assistant message gets a result) and end as "aborted".
 */
function endCancelled(state: RunState, err: unknown, promptStart: number): void {
  if (err instanceof CancelledDuringModelCall && err.partial) {
    state.add(err.partial);
    emit({ type: "message_end", message: err.partial });
    emit({ type: "turn_end", message: err.partial, toolResults: [] });
  }
  const last = [...state.conversation.transcript].reverse().find((m): m is AssistantMessage => m.role === "assistant");
  closeCancelledBatch(state, last?.content.filter((c): c is ToolCall => c.type === "toolCall") ?? [], emit);
  // Every prompt waiting for an answer gets one (queued ones too: their callers are waiting).
  state.cancelled();
  // Exactly one agent_end per loop: an idle session's last loop has had its own.
  if (state.loopOpen || !state.everStarted) {
    if (!state.everStarted) emit({ type: "agent_start" });
    state.loopEnded();
    emit({ type: "agent_end", messages: state.conversation.newMessages.slice(promptStart) });
  }
}
