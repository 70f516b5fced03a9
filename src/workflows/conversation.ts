/**
 * The run's messages: the transcript, the model's context (what the model
 * sees), what the worker holding the context knows of it, and where history
 * holds messages already (so model calls can refer to them). A part of
 * `RunState` that only this file writes.
 */
import type { ToolResultMessage, Usage } from "@jai/ai";
import type { AgentMessage } from "../shared/contracts.js";
import type { ContinuedRun } from "../shared/wire.js";
import { addUsage, emptyUsage } from "../shared/usage.js";

/** `details` is for logs and UI only: the model never sees it. */
export function withoutDetails(message: AgentMessage): AgentMessage {
  if (message.role !== "toolResult" || message.details === undefined) return message;
  const { details: _details, ...rest } = message;
  return rest;
}

export class Conversation {
  /** Every message of this run (earlier runs of the chain hold theirs: `earlierMessages`). */
  transcript: AgentMessage[] = [];
  /** What the model sees: the transcript without details, compacted when it outgrows the budget. */
  context: AgentMessage[] = [];
  /** Bumped when earlier context messages are rewritten: workers' cached prefixes become stale. */
  contextEpoch = 0;
  /** Context messages the worker that made the last model call holds (it appended its reply). */
  workerKnows = 0;
  /**
   * Tool results that are exactly their activity's output, by their content
   * (the very array the activity returned), with that activity's id: model
   * calls pass those by reference. Not by tool-call id: models reuse ids.
   */
  fromActivity = new Map<unknown, string>();
  /**
   * The model's copy of a tool result kept whole in a blob store, by the whole result's content (the array the
   * activity returned): its context message holds this instead (`ExecuteToolOutput.modelContent`).
   */
  modelViews = new WeakMap<object, ToolResultMessage["content"]>();
  /**
   * User messages that history holds already, by object: where (see
   * `UserInputRef.source`). A call whose new messages are too big to ride
   * inline passes these by reference.
   */
  fromInput = new WeakMap<AgentMessage, string>();
  /** The chain's new messages (the result's), from `newMessagesOmitted` on. */
  newMessages: AgentMessage[] = [];
  /** New messages earlier runs of the chain left behind (counted, not carried). */
  newMessagesOmitted = 0;
  /** Transcript messages earlier runs of the chain hold. */
  earlierMessages = 0;
  /** Usage of the chain's assistant messages (and its sub-agents'). */
  usage: Usage = emptyUsage();

  /** Messages a continued transcript starts from: in the transcript and context, not new. */
  seed(messages: AgentMessage[]): void {
    this.transcript.push(...messages);
    this.context.push(...messages.map(withoutDetails));
  }

  add(message: AgentMessage): void {
    this.transcript.push(message);
    const model = withoutDetails(message);
    const view = model.role === "toolResult" ? this.modelViews.get(message.content as object) : undefined;
    this.context.push(view && model.role === "toolResult" ? { ...model, content: view } : model);
    this.newMessages.push(message);
    if (message.role === "assistant") this.usage = addUsage(this.usage, message.usage);
  }

  /** Usage spent outside this run's messages (a sub-agent's). */
  addUsage(usage: Usage): void {
    this.usage = addUsage(this.usage, usage);
  }

  /** Where the chain's next new message will be counted. */
  newMessagesEnd(): number {
    return this.newMessagesOmitted + this.newMessages.length;
  }

  hasResult(toolCallId: string): boolean {
    return this.transcript.some((m) => m.role === "toolResult" && m.toolCallId === toolCallId);
  }

  /**
   * `content` is exactly the output of activity `activityId`: model calls refer to it there. With `modelContent`
   * (a result kept whole in a blob store) the context holds that copy instead, and it is what is referred to.
   */
  noteActivityOutput(content: unknown, activityId: string, modelContent?: ToolResultMessage["content"]): void {
    if (modelContent && typeof content === "object" && content !== null) {
      this.modelViews.set(content, modelContent);
      this.fromActivity.set(modelContent, activityId);
    } else this.fromActivity.set(content, activityId);
  }

  /** `message` is held by history at `source` (see `UserInputRef.source`). */
  noteInput(message: AgentMessage, source: string): void {
    this.fromInput.set(message, source);
  }

  /** The worker that answered a model call cached the context and its reply. */
  modelAnswered(): void {
    this.workerKnows = this.context.length + 1;
  }

  /** Compaction rewrote the context: a new epoch, which no worker holds; no result is its activity's output any more. */
  replaceContext(next: AgentMessage[]): void {
    this.context = next;
    this.contextEpoch++;
    this.fromActivity.clear();
    this.workerKnows = next.length;
  }

  /** The new run takes over what the carry holds of the conversation. */
  restore(carry: ContinuedRun): void {
    this.context = [...carry.context];
    this.earlierMessages = carry.earlierMessages;
    this.newMessages = [...carry.newMessages];
    this.newMessagesOmitted = carry.newMessagesOmitted;
    this.usage = carry.usage;
  }
}
