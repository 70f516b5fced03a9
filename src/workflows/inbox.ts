/**
 * What people sent the run and it has not processed yet: steering, follow-ups
 * and session prompts, the answers their callers wait for, what will never be
 * processed, and whether the session was closed. A part of `RunState` that
 * only this file writes; the update handlers and the loop go through its
 * intent methods.
 */
import type { UserMessage } from "@jai/ai";
import type { AgentMessage, AgentStopReason, DroppedMessage } from "../shared/contracts.js";
import type { ContinuedRun, PromptAnswer } from "../shared/wire.js";
import { jsonBytes } from "../shared/payload-limits.js";

/** A session prompt waiting to be taken up; its caller waits for the answer under its id. */
export interface QueuedPrompt {
  id: number;
  message: UserMessage;
}

/** The text a dropped message is remembered by. */
function preview(message: AgentMessage): string {
  const content = message.content;
  const text =
    typeof content === "string" ? content : content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ");
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

export class Inbox {
  /** Steering messages not yet taken up (they enter before the next model call). */
  steering: UserMessage[] = [];
  /** Follow-ups not yet taken up (they start more turns once the loop would stop). */
  followUps: UserMessage[] = [];
  /** Steering taken from the queue that enters the transcript before the next model call. */
  pendingInput: AgentMessage[] = [];
  /** Session prompts not yet taken up. */
  prompts: QueuedPrompt[] = [];
  nextPromptId = 1;
  /** The session prompt being answered. */
  currentPrompt?: { id: number; start: number };
  /** Answers of session prompts (positions among the chain's new messages), until their callers have them. */
  answers: PromptAnswer[] = [];
  /** Accepted messages that will never be processed, and why. */
  dropped: DroppedMessage[] = [];
  /** `close()` was called: the session ends once its prompts are answered. */
  closed = false;

  /** Queues a steering message; returns how many are queued. */
  steer(message: UserMessage): number {
    return this.steering.push(message);
  }

  /** Queues a follow-up; returns how many are queued. */
  followUp(message: UserMessage): number {
    return this.followUps.push(message);
  }

  /** Queues a session prompt; returns the id its caller waits for the answer under. */
  submitPrompt(message: UserMessage): number {
    const id = this.nextPromptId++;
    this.prompts.push({ id, message });
    return id;
  }

  close(): void {
    this.closed = true;
  }

  /** Bytes of everything accepted and not yet in the transcript (all of it is carried across continue-as-new). */
  queuedBytes(): number {
    return (
      jsonBytes(this.steering) +
      jsonBytes(this.followUps) +
      jsonBytes(this.pendingInput) +
      jsonBytes(this.prompts.map((p) => p.message))
    );
  }

  /** Everything still queued will not be processed: record why, so the callers can see it. */
  dropQueued(reason: string): void {
    const drop = (kind: DroppedMessage["kind"], messages: AgentMessage[]) => {
      for (const message of messages) this.dropped.push({ kind, preview: preview(message), reason });
    };
    drop("steer", this.pendingInput.splice(0));
    drop("steer", this.steering.splice(0));
    drop("followUp", this.followUps.splice(0));
    drop(
      "prompt",
      this.prompts.splice(0).map((p) => p.message),
    );
  }

  /** Steering queued so far enters before the next model call (pi: after a turn's tools, before the next turn). */
  takeSteering(): void {
    this.pendingInput.push(...this.steering.splice(0));
  }

  /** Follow-ups queued so far start more turns once the loop would stop; false when there are none. */
  takeFollowUps(): boolean {
    this.pendingInput.push(...this.followUps.splice(0));
    return this.pendingInput.length > 0;
  }

  /** The loop stops with messages taken but not entered: they go back to the front of the steering queue. */
  returnPendingInput(): void {
    this.steering.unshift(...(this.pendingInput.splice(0) as UserMessage[]));
  }

  /** The messages taken up for the next turn, removed from the queue. */
  takePendingInput(): AgentMessage[] {
    return this.pendingInput.splice(0);
  }

  /** The next session prompt, now being answered (its messages start at `start`); undefined when none is queued. */
  takePrompt(start: number): UserMessage | undefined {
    const next = this.prompts.shift();
    if (!next) return undefined;
    this.currentPrompt = { id: next.id, start };
    return next.message;
  }

  /** Records the current session prompt's answer, its messages ending at `end` (over the chain's new messages). */
  answerPrompt(outcome: { stopReason: AgentStopReason; errorMessage?: string }, end: number): void {
    const current = this.currentPrompt;
    if (!current) return;
    this.currentPrompt = undefined;
    this.answers.push({ id: current.id, start: current.start, end, ...outcome });
  }

  /** The session was cancelled: prompts not taken up yet get an (empty, aborted) answer too, as their callers wait. */
  abortQueuedPrompts(end: number): void {
    for (const queued of this.prompts.splice(0)) {
      this.answers.push({
        id: queued.id,
        start: end,
        end,
        stopReason: "aborted",
        errorMessage: "Session cancelled before this prompt ran",
      });
    }
  }

  /** Whether prompt `id` has, or will have, an answer in this run. */
  knowsPrompt(id: number): boolean {
    return (
      this.answers.some((a) => a.id === id) || this.currentPrompt?.id === id || this.prompts.some((p) => p.id === id)
    );
  }

  /** Prompt `id`'s answer, removed (delivered: no later run needs to carry it); undefined while there is none. */
  takeAnswer(id: number): PromptAnswer | undefined {
    const index = this.answers.findIndex((a) => a.id === id);
    return index < 0 ? undefined : this.answers.splice(index, 1)[0];
  }

  /** The new run takes over what the carry holds of the inbox. In place: the update handlers hold these arrays. */
  restore(carry: ContinuedRun): void {
    this.steering.push(...carry.steering);
    this.followUps.push(...carry.followUps);
    this.prompts.push(...(carry.prompts ?? []));
    this.pendingInput.push(...(carry.loop?.pending ?? []));
    this.answers.push(...(carry.answers ?? []));
    this.dropped.push(...(carry.dropped ?? []));
    this.nextPromptId = carry.nextPromptId ?? this.nextPromptId;
    this.closed = carry.closed ?? false;
    if (carry.loop?.promptId !== undefined)
      this.currentPrompt = { id: carry.loop.promptId, start: carry.loop.promptStart ?? 0 };
  }
}
