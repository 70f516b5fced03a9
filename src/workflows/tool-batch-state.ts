/**
 * The batch of tool calls being run, the calls waiting for a person or a
 * client, and the run's approval policy. A part of `RunState` that only this
 * file writes; tool-calls.ts runs the batch through its intent methods, the
 * approve/deny handlers decide through `decide`, the policy and client-result
 * handlers through `setPolicy` and `submitClientResult`.
 */
import type { ToolCall } from "@jai/ai";
import type {
  ApprovalDecision,
  ApprovalPolicy,
  PendingApproval,
  PendingClientResult,
  PendingToolCall,
} from "../shared/contracts.js";
import type { ContinuedRun, ExecuteToolOutput } from "../shared/wire.js";
import { flooredVerdict, type Verdict } from "../shared/approval-rules.js";

/** One tool call waiting for a person. */
export interface ApprovalWait {
  pending: PendingApproval;
  decision?: ApprovalDecision;
}

/** One client tool call waiting for a client's result. */
export interface ClientWait {
  pending: PendingClientResult;
  /** The tool's result schema, which a submitted result must satisfy. */
  resultSchema?: Record<string, unknown>;
  /** The submitted result, once a client sent it. */
  submitted?: ExecuteToolOutput;
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
  /** The run's approval policy as it stands (set at start, changed by an operator); undefined when it has none. */
  policy?: ApprovalPolicy;
  /** The policy the current batch follows: the run's as it stood when the batch began. */
  batchPolicy?: ApprovalPolicy;
  /** Tools a person approved with `remember`, in the order they were. */
  remembered: string[] = [];
  /**
   * Policies this run can never loosen (its input's `approvalPolicyFloor`): fixed from its start, judged beside
   * `batchPolicy` in every decision (`verdict`), passed on to its sub-agents (`childFloor`).
   */
  floor: readonly ApprovalPolicy[] = [];
  /** Client tool calls waiting for a client's result, by tool-call id. */
  clientWaits = new Map<string, ClientWait>();
  /** Whether the run shows "waiting_for_client" (see CLIENT_WAIT_STATUS_PATCH); set at its first client wait. */
  clientWaitStatus = false;

  /** A batch begins: every call is pending, none started. */
  begin(calls: ToolCall[]): ToolBatch {
    const entries: PendingToolCall[] = calls.map((c) => ({
      toolCallId: c.id,
      toolName: c.name,
      args: c.arguments,
      started: false,
    }));
    this.pending = [...entries];
    this.batchPolicy = this.policy;
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

  /** The run was cancelled: no batch, no call waiting for a person or a client. */
  clear(): void {
    this.pending = [];
    this.batch = undefined;
    this.approvals.clear();
    this.clientWaits.clear();
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

  /**
   * A person approved call `toolCallId` and said to stop asking for its tool: later calls of that tool run
   * without asking, and so do calls of it waiting now. Contract: the validator checked it waits.
   */
  approveAndRemember(toolCallId: string): void {
    const name = this.approvals.get(toolCallId)!.pending.toolName;
    if (!this.remembered.includes(name)) this.remembered.push(name);
    for (const wait of this.approvals.values())
      if (!wait.decision && wait.pending.toolName === name) wait.decision = { approved: true };
  }

  /** The run's policy from now on (each batch takes it up when it begins). */
  setPolicy(policy: ApprovalPolicy | undefined): void {
    this.policy = policy;
  }

  /** A run starts: the policy and remembered tools a continued run carried, else its input's policy; its floor. */
  startApprovals(
    carried: ContinuedRun["approvals"],
    inputPolicy: ApprovalPolicy | undefined,
    floor: readonly ApprovalPolicy[] = [],
  ): void {
    this.policy = carried ? carried.policy : inputPolicy;
    this.remembered = [...(carried?.remembered ?? [])];
    this.floor = floor;
  }

  /**
   * What the current batch does with a call of tool `name`: the stricter verdict of its policy and the run's floor
   * (deny > ask > tool > allow). A floor's deny is final: no policy change and no `remember` runs the call.
   */
  verdict(name: string): Verdict {
    return flooredVerdict(this.floor, this.batchPolicy, name);
  }

  /**
   * The floor of a sub-agent this batch starts: this run's floor and its policy (as the batch began, and as it
   * stands now when changed since), without repeats. A child judges each of them beside its own policy, so it can
   * loosen nothing its parent could not; its parent's remembered tools are not passed on (it asks for itself).
   * Undefined when the run has neither floor nor policy: the child starts as it always did.
   */
  childFloor(): ApprovalPolicy[] | undefined {
    const seen = new Set<string>();
    const floor: ApprovalPolicy[] = [];
    for (const policy of [...this.floor, this.batchPolicy, this.policy]) {
      const key = policy === undefined ? undefined : JSON.stringify(policy);
      if (key === undefined || seen.has(key)) continue;
      seen.add(key);
      floor.push(policy!);
    }
    return floor.length > 0 ? floor : undefined;
  }

  /** What continue-as-new carries of the approvals (nothing when the run never had a policy nor remembered a tool). */
  approvalsCarry(): ContinuedRun["approvals"] {
    if (this.policy === undefined && this.remembered.length === 0) return undefined;
    return {
      ...(this.policy !== undefined ? { policy: this.policy } : {}),
      ...(this.remembered.length ? { remembered: [...this.remembered] } : {}),
    };
  }

  /** Call `index` of the current batch (a client tool's) waits for a client's result from `since` (ISO time). */
  awaitClient(index: number, pending: PendingClientResult, resultSchema?: Record<string, unknown>): ClientWait {
    const wait: ClientWait = { pending, ...(resultSchema ? { resultSchema } : {}) };
    this.clientWaits.set(pending.toolCallId, wait);
    const entry = this.batch?.entries[index];
    if (entry) entry.waitingForClient = true;
    return wait;
  }

  /** The run shows "waiting_for_client" from now on (the caller checked CLIENT_WAIT_STATUS_PATCH). */
  showClientWaitStatus(): void {
    this.clientWaitStatus = true;
  }

  /** Whether a client tool call waits for its result and no other call of the batch executes. */
  onlyClientsWait(): boolean {
    if (!this.clientWaitStatus || this.waitingClientResults().length === 0) return false;
    return this.pending.every((p) => !p.started || p.waitingForClient === true);
  }

  /** A client submitted call `toolCallId`'s result. Contract: the validator checked it waits (`waitingForClient`). */
  submitClientResult(toolCallId: string, output: ExecuteToolOutput): void {
    this.clientWaits.get(toolCallId)!.submitted = output;
  }

  /** Call `toolCallId` no longer waits for a client (answered, timed out, skipped or cancelled). */
  clientWaitEnded(index: number, toolCallId: string): void {
    this.clientWaits.delete(toolCallId);
    const entry = this.batch?.entries[index];
    if (entry) delete entry.waitingForClient;
  }

  /** The client tool call `toolCallId` if it waits for a result. */
  clientWaitFor(toolCallId: string): ClientWait | undefined {
    const wait = this.clientWaits.get(toolCallId);
    return wait && !wait.submitted ? wait : undefined;
  }

  /** The client tool calls waiting for a result. */
  waitingClientResults(): PendingClientResult[] {
    return [...this.clientWaits.values()].filter((w) => !w.submitted).map((w) => ({ ...w.pending }));
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
