/**
 * The seam run features plug into (a budget, typed output, client tools, an approval policy, a model chain...):
 * one file per feature owning its input fields, their check, its patch, its part of the run's state, snapshot,
 * carry and result, and its say in the loop through generic hooks (before a model call, a turn's tool calls,
 * after them). The loop (agent-run.ts, prompt-loop.ts) names no feature: it asks the list in features/index.ts.
 *
 * Contract: a feature that changes a recorded run's commands asks its patch in `open` (first thing in the run,
 * in list order: see patches.ts), or where it decides after a regular activity, timer or update, never after a
 * local activity's result.
 */
import type { AssistantMessage, Tool, ToolCall, ToolResultMessage } from "@jai/ai";
import type { AgentEvent, AgentRunResult, AgentRunState, AgentStopReason } from "../../shared/contracts.js";
import type { FeatureInput } from "../../shared/feature-inputs.js";
import type { RunContext } from "../run-context.js";
import type { RunState } from "../run-state.js";
import type { AgentRunWorkflowInput, ContinuedRun, PromptLoopState, RunSetup } from "../../shared/wire.js";

/** A run feature: what it checks of any input (its entry in shared/feature-inputs.ts), and its part in a run that uses it. */
export interface RunFeature extends FeatureInput {
  /**
   * Whether this run uses the feature, asked once, first thing in the run (a patch asked here records its marker
   * there): the run's part of it, or undefined.
   */
  open(input: AgentRunWorkflowInput): ActiveFeature | undefined;
}

/** A feature in one run: each hook optional. */
export interface ActiveFeature {
  /** Input fields this run treats as unknown all the same (a part of the feature recorded before its patch). */
  readonly unknownFields?: readonly string[];
  /** Before the update handlers: the feature's state from the input (and a continued run's carry, `input.continued`). */
  start?(state: RunState, input: AgentRunWorkflowInput): void;
  /** A new run's setup, once resolved: the feature's additions, or why the run is refused. */
  setup?(setup: RunSetup, input: AgentRunWorkflowInput): RunSetup | string;
  /** Tools offered to the model beside the setup's (last, in list order). */
  readonly modelTools?: Tool[];
  /** The feature's hooks for one prompt's loop (`resume`: what a continued run carried of it). */
  turns?(run: RunContext, resume: PromptLoopState | undefined): TurnHooks;
  /** A prompt's loop ended (the run's state says how). */
  promptEnded?(state: RunState): void;
  /** Whether a session ends after this prompt, rather than wait for the next. */
  endsSession?(state: RunState): boolean;
  /** The feature's fields of the run's result and of a prompt's answer. */
  result?(state: RunState): Partial<AgentRunResult>;
  /** The feature's fields of the `state` query. */
  snapshot?(state: RunState): Partial<AgentRunState>;
  /** What the next run of the chain needs of the feature (beside what the loop carries). */
  carry?(state: RunState): Partial<ContinuedRun>;
  /**
   * A sub-agent starts (`child`: the tool call, and the child's workflow id, unique where a model's call ids may
   * not be): what its input gets of the feature (a share of a budget, a floor).
   */
  childInput?(run: RunContext, child: SubAgentCall): Partial<AgentRunWorkflowInput>;
  /** That sub-agent ended: its result, or the error its child workflow failed with. */
  childEnded?(run: RunContext, child: SubAgentCall, ended: { result: AgentRunResult } | { error: unknown }): void;
}

/** A sub-agent's tool call and its child workflow's id. */
export interface SubAgentCall {
  call: ToolCall;
  workflowId: string;
}

/** How one prompt's loop ended. */
export interface LoopOutcome {
  stopReason: AgentStopReason;
  errorMessage?: string;
  /** The prompt's validated answer, when a feature judged one (the result's `output`). */
  output?: unknown;
}

/** What the loop knows when a turn's tool calls have run. */
export interface TurnFacts {
  /** The assistant message of the turn. */
  message: AssistantMessage;
  /** Every tool call of the message, in the model's order. */
  calls: ToolCall[];
  /** The calls this feature claimed (`claim`): not run as tools. */
  claimed: ToolCall[];
  /** The calls that were to run as tools (none claimed), before any limit. */
  unclaimed: ToolCall[];
  /** Of those, the ones a `limit` kept from running. */
  held: ToolCall[];
  /** Every call that ran asked to end the run (`terminate`). */
  terminate: boolean;
  /** Sends one event. */
  emit(event: AgentEvent): void;
}

/** A feature's say on a turn, after its tool calls ran. */
export interface TurnVerdict {
  /** More tool results (already entered, with their events), after those of the calls that ran. */
  results: ToolResultMessage[];
  /** The prompt ends here (before `terminate` when the feature says so first). */
  end?: LoopOutcome;
  /** Another turn even if the model called no tool (it has an error to correct). */
  again?: boolean;
}

/** A feature's hooks in one prompt's loop. */
export interface TurnHooks {
  /** Before each model call: an outcome ends the prompt there instead. */
  beforeModelCall?(): LoopOutcome | undefined;
  /** Of a turn's tool calls, those that are the feature's to answer (`afterTools`), not run as tools. */
  claim?(calls: ToolCall[]): ToolCall[];
  /** Of the calls to run, how many from the first may run; the rest are the feature's to answer. */
  limit?(calls: ToolCall[]): number;
  /** After the calls ran: the feature's results and its say on how the turn ends. */
  afterTools?(turn: TurnFacts): Promise<TurnVerdict | undefined> | TurnVerdict | undefined;
  /** What a continue-as-new in this prompt carries of the feature's loop state. */
  carry?(): Partial<PromptLoopState>;
}
