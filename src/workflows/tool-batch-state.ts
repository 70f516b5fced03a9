/**
 * The batch of tool calls being run and the calls waiting for a person. A part
 * of `RunState` that only this file writes; tool-calls.ts runs the batch
 * through its intent methods, the approve/deny handlers decide through `decide`.
 */
import type { ToolCall } from "@jai/ai";
import type { ApprovalDecision, PendingApproval, PendingToolCall } from "../contracts.js";
import type { ExecuteToolOutput } from "./wire.js";

/** One tool call waiting for a person. */
export interface ApprovalWait {
  pending: PendingApproval;
  decision?: ApprovalDecision;
}

/** The batch being run: its calls' outputs as they complete, for a clean end on cancellation. */
export interface ToolBatch {
  toolCallIds: string[];
  outputs: (ExecuteToolOutput | undefined)[];
  /** The calls as the state query shows them, in source order. */
  entries: PendingToolCall[];
  /** Calls whose `tool_execution_start` was emitted: a cancel ends them with `tool_execution_end`. */
  announced: Set<PendingToolCall>;
}

export class ToolBatchState {
  /** Tool calls of the current batch without a result yet. */
  pending: PendingToolCall[] = [];
  /** The batch being run, if any. */
  batch?: ToolBatch;
  /** Calls waiting for a person, by tool-call id. */
  approvals = new Map<string, ApprovalWait>();

  /** A batch begins: every call is pending, none started. */
  begin(calls: ToolCall[]): ToolBatch {
    const entries: PendingToolCall[] = calls.map((c) => ({
      toolCallId: c.id,
      toolName: c.name,
      args: c.arguments,
      started: false,
    }));
    this.pending = [...entries];
    this.batch = {
      toolCallIds: calls.map((c) => c.id),
      outputs: calls.map(() => undefined),
      entries,
      announced: new Set(),
    };
    return this.batch;
  }

  /** Whether `batch` is still the run's: after a cancellation it is closed, and late completions leave it alone. */
  isCurrent(batch: ToolBatch): boolean {
    return this.batch === batch;
  }

  /** Call `index` of the batch was announced (its `tool_execution_start` emitted); it may still wait for approval. */
  announce(batch: ToolBatch, index: number): void {
    batch.announced.add(batch.entries[index]);
  }

  /** Call `index` of the current batch starts executing (its activity or child run is scheduled). */
  executing(index: number): void {
    const entry = this.batch?.entries[index];
    if (entry) entry.started = true;
  }

  /** Call `index` of `batch` finished with `output`. */
  finish(batch: ToolBatch, index: number, output: ExecuteToolOutput): void {
    batch.outputs[index] = output;
    this.pending = this.pending.filter((p) => p !== batch.entries[index]);
  }

  /** The batch ended: every call has its result. */
  end(batch: ToolBatch): void {
    if (this.batch === batch) this.batch = undefined;
  }

  /** The output call `toolCallId` of the current batch finished with, if it did. */
  outputOf(toolCallId: string): ExecuteToolOutput | undefined {
    const batch = this.batch;
    return batch?.outputs[batch.toolCallIds.indexOf(toolCallId)];
  }

  /** Whether call `toolCallId` was announced and has no output yet (a cancel must end it with `tool_execution_end`). */
  runningUnfinished(toolCallId: string): boolean {
    const announced = this.batch?.announced;
    return this.pending.some((p) => p.toolCallId === toolCallId && announced?.has(p));
  }

  /** The run was cancelled: no batch, no call waiting for a person. */
  clear(): void {
    this.pending = [];
    this.batch = undefined;
    this.approvals.clear();
  }

  /** Call `index` of the current batch waits for a person from `since` (ISO time). */
  awaitApproval(index: number, call: ToolCall, since: string): ApprovalWait {
    const wait: ApprovalWait = {
      pending: { toolCallId: call.id, toolName: call.name, args: call.arguments, since },
    };
    this.approvals.set(call.id, wait);
    const entry = this.batch?.entries[index];
    if (entry) entry.waitingForApproval = true;
    return wait;
  }

  /** Call `toolCallId` no longer waits for a person (decided, timed out, skipped or cancelled). */
  approvalEnded(index: number, toolCallId: string): void {
    this.approvals.delete(toolCallId);
    const entry = this.batch?.entries[index];
    if (entry) delete entry.waitingForApproval;
  }

  /** A person decided on call `toolCallId`. Contract: the handler's validator checked it waits (`waitingFor`). */
  decide(toolCallId: string, decision: ApprovalDecision): void {
    this.approvals.get(toolCallId)!.decision = decision;
  }

  /** Whether call `toolCallId` waits for a decision. */
  waitingFor(toolCallId: string): boolean {
    const wait = this.approvals.get(toolCallId);
    return wait !== undefined && !wait.decision;
  }

  /** The calls waiting for a decision. */
  waitingApprovals(): PendingApproval[] {
    return [...this.approvals.values()].filter((a) => !a.decision).map((a) => ({ ...a.pending }));
  }
}
