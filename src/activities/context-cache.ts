/**
 * Each worker's copy of its runs' model contexts, so a model call's input
 * carries only what is new (history grows linearly, not with the square of the
 * turns). A miss — another worker made the last call, a restart, an evicted
 * entry, a compaction — is filled from the workflow itself with the
 * `modelContext` query: Temporal stays the only source of truth.
 */
import type { Client } from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import type { ToolResultMessage } from "@jai/ai";
import type { AgentMessage, ExecuteToolOutput, ModelContextRef, ToolResultRef } from "../types.js";
import { modelContextQuery } from "../workflows/definitions.js";

interface Entry {
  epoch: number;
  messages: AgentMessage[];
}

/** Messages asked for per query page; the workflow also cuts pages at ~1 MB. */
const PAGE = 500;

type Run = { workflowId: string; runId: string };

export class ContextCache {
  private entries = new Map<string, Entry>();
  /** Outputs of the tool activities this worker ran, for model calls that pass them by reference. */
  private outputs = new Map<string, { toolName: string; output: ExecuteToolOutput }>();

  constructor(
    private readonly client: () => Client | undefined,
    private readonly capacity = 100,
  ) {}

  /** The full context of a call: cached prefix (or the workflow's, on a miss) plus what the call appends. */
  async resolve(run: { workflowId: string; runId: string }, ref: ModelContextRef): Promise<AgentMessage[]> {
    const key = `${run.workflowId}/${run.runId}`;
    const entry = this.entries.get(key);
    let prefix: AgentMessage[];
    if (ref.base === 0) prefix = [];
    else if (entry && entry.epoch === ref.epoch && entry.messages.length <= ref.base) {
      // A hit, possibly short of messages that were too big to ride along: read only those.
      prefix = entry.messages.length === ref.base ? entry.messages : entry.messages.concat(await this.fetch(run, ref, entry.messages.length));
    } else {
      prefix = await this.fetch(run, ref, 0);
    }
    return prefix.concat(await this.resolveAppend(run, ref));
  }

  /** Remembers a tool activity's output (as the workflow will receive it). */
  rememberOutput(run: Run, toolCallId: string, toolName: string, output: ExecuteToolOutput): void {
    const key = `${run.workflowId}/${run.runId}/${toolCallId}`;
    this.outputs.delete(key);
    this.outputs.set(key, { toolName, output: JSON.parse(JSON.stringify(output)) as ExecuteToolOutput });
    while (this.outputs.size > this.capacity * 20) this.outputs.delete(this.outputs.keys().next().value!);
  }

  /** Inline messages as they are; references from this worker's outputs, else read from the workflow. */
  private async resolveAppend(run: Run, ref: ModelContextRef): Promise<AgentMessage[]> {
    const out: AgentMessage[] = [];
    for (let i = 0; i < ref.append.length; i++) {
      const entry = ref.append[i];
      if (!("ref" in entry)) {
        out.push(entry);
        continue;
      }
      const known = this.outputs.get(`${run.workflowId}/${run.runId}/${entry.toolCallId}`);
      out.push(known ? toolResult(entry, known.toolName, known.output) : (await this.fetch(run, { ...ref, base: ref.base + i + 1 }, ref.base + i))[0]);
    }
    return out;
  }

  /** Remembers a call's context and the reply the workflow will append to it. */
  remember(run: { workflowId: string; runId: string }, epoch: number, messages: AgentMessage[]): void {
    const key = `${run.workflowId}/${run.runId}`;
    this.entries.delete(key);
    this.entries.set(key, { epoch, messages });
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Context messages [from, ref.base) as the workflow holds them. */
  private async fetch(run: Run, ref: Pick<ModelContextRef, "epoch" | "base">, from: number): Promise<AgentMessage[]> {
    const client = this.client();
    if (!client) throw ApplicationFailure.nonRetryable("The worker has no Temporal client to read a run's context with", "ContextUnavailable");
    const handle = client.workflow.getHandle(run.workflowId, run.runId);
    const out: AgentMessage[] = [];
    while (from + out.length < ref.base) {
      const offset = from + out.length;
      const page = await handle.query(modelContextQuery, { offset, limit: Math.min(PAGE, ref.base - offset) });
      if (page.epoch !== ref.epoch || page.total < ref.base || page.messages.length === 0) {
        throw ApplicationFailure.retryable(`run context changed while reading it (epoch ${page.epoch}, expected ${ref.epoch})`, "ContextUnavailable");
      }
      out.push(...page.messages);
    }
    return out;
  }
}

/** The context message the workflow made from a tool activity's output (details stripped). */
function toolResult(ref: ToolResultRef, toolName: string, output: ExecuteToolOutput): ToolResultMessage {
  return { role: "toolResult", toolCallId: ref.toolCallId, toolName, content: output.result.content, isError: output.isError, timestamp: ref.timestamp };
}
