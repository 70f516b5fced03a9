/**
 * Each worker's copy of its runs' model contexts, so a model call's input
 * carries only what is new (history grows linearly, not with the square of the
 * turns). A miss — another worker made the last call, a restart, an evicted
 * entry, a compaction — is filled from the workflow itself with the
 * `modelContext` query: Temporal stays the only source of truth.
 *
 * A cache can also be wrong: this worker's late attempt of a model call or a
 * tool (paused past its heartbeat timeout while another worker's attempt was
 * recorded) leaves a reply or an output history does not hold. So whatever is
 * assembled is checked against the digest the workflow sent; on a mismatch the
 * whole context is read from the workflow, and a context that still differs
 * fails the attempt (retryable): the model never sees an unrecorded context.
 */
import { createHash } from "node:crypto";
import type { Client } from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import type { ToolResultMessage } from "@jai/ai";
import type { AgentMessage, ExecuteToolOutput, ModelContextRef, ToolResultRef } from "../types.js";
import { contextDigest } from "../workflows/context-digest.js";
import { modelContextQuery } from "../workflows/definitions.js";

interface Entry {
  epoch: number;
  messages: AgentMessage[];
}

/** Messages asked for per query page; the workflow also cuts pages at ~1 MB. */
const PAGE = 500;

type Run = { workflowId: string; runId: string };

/** Node's SHA-256: the same digest as the workflow's plain-JavaScript one, faster. */
const nodeSha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The digest a worker computes over a context it assembled (the workflow computes the same over what it recorded). */
export const workerContextDigest = (messages: AgentMessage[]) => contextDigest(messages, nodeSha256);

/** How a context was obtained, for logs and tests. */
export interface ResolveStats {
  /** Times an assembled context differed from the recorded one and was read again from the workflow. */
  mismatches: number;
}

export class ContextCache {
  private entries = new Map<string, Entry>();
  /** Outputs of the tool activities this worker ran, by activity id, for model calls that pass them by reference. */
  private outputs = new Map<string, { toolName: string; output: ExecuteToolOutput }>();
  readonly stats: ResolveStats = { mismatches: 0 };

  constructor(
    private readonly client: () => Client | undefined,
    private readonly capacity = 100,
    /** Told, for each call with a prefix, whether the cached one was used (metrics). */
    private readonly onLookup: (hit: boolean) => void = () => {},
  ) {}

  /** The full context of a call, exactly the one the workflow recorded (checked against `ref.digest`). */
  async resolve(run: Run, ref: ModelContextRef, onMismatch?: (why: string) => void): Promise<AgentMessage[]> {
    const messages = await this.assemble(run, ref);
    if (ref.digest === undefined || workerContextDigest(messages) === ref.digest) return messages;
    // Something this worker holds is not what history holds: forget it and read the recorded context.
    this.stats.mismatches++;
    onMismatch?.(`the context assembled from this worker's cache differs from the recorded one (${messages.length} messages); reading it from the workflow`);
    this.forget(run);
    const recorded = await this.fetch(run, ref.epoch, 0, ref.base + ref.append.length);
    if (workerContextDigest(recorded) === ref.digest) return recorded;
    throw ApplicationFailure.retryable(
      `the run's context read from the workflow does not match the digest of the call (${recorded.length} messages, epoch ${ref.epoch})`,
      "ContextMismatch",
    );
  }

  /** Cached prefix (or the workflow's, on a miss) plus what the call appends. */
  private async assemble(run: Run, ref: ModelContextRef): Promise<AgentMessage[]> {
    const entry = this.entries.get(key(run));
    let prefix: AgentMessage[];
    if (ref.base === 0) prefix = [];
    else if (entry && entry.epoch === ref.epoch && entry.messages.length <= ref.base) {
      this.onLookup(true);
      // A hit, possibly short of messages that were too big to ride along: read only those.
      prefix = entry.messages.length === ref.base ? entry.messages : entry.messages.concat(await this.fetch(run, ref.epoch, entry.messages.length, ref.base));
    } else {
      this.onLookup(false);
      prefix = await this.fetch(run, ref.epoch, 0, ref.base);
    }
    return prefix.concat(await this.resolveAppend(run, ref));
  }

  /** Remembers a tool activity's output (as the workflow will receive it, if this attempt is the one recorded). */
  rememberOutput(run: Run, activityId: string, toolName: string, output: ExecuteToolOutput): void {
    const id = `${key(run)}/${activityId}`;
    this.outputs.delete(id);
    this.outputs.set(id, { toolName, output: JSON.parse(JSON.stringify(output)) as ExecuteToolOutput });
    while (this.outputs.size > this.capacity * 20) this.outputs.delete(this.outputs.keys().next().value!);
  }

  /** Inline messages as they are; references from this worker's outputs, the rest read from the workflow in one go. */
  private async resolveAppend(run: Run, ref: ModelContextRef): Promise<AgentMessage[]> {
    const out: (AgentMessage | undefined)[] = ref.append.map((entry) => {
      if (!("ref" in entry)) return entry;
      const known = entry.activityId !== undefined ? this.outputs.get(`${key(run)}/${entry.activityId}`) : undefined;
      return known ? toolResult(entry, known.toolName, known.output) : undefined;
    });
    const firstMissing = out.indexOf(undefined);
    if (firstMissing >= 0) {
      const read = await this.fetch(run, ref.epoch, ref.base + firstMissing, ref.base + ref.append.length);
      for (let i = firstMissing; i < out.length; i++) out[i] ??= read[i - firstMissing];
    }
    return out as AgentMessage[];
  }

  /** Remembers a call's context and the reply the workflow will append to it (if this attempt is the one recorded). */
  remember(run: Run, epoch: number, messages: AgentMessage[]): void {
    this.entries.delete(key(run));
    this.entries.set(key(run), { epoch, messages });
    while (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
  }

  /** Drops everything cached for a run. */
  private forget(run: Run): void {
    this.entries.delete(key(run));
    const prefix = `${key(run)}/`;
    for (const id of [...this.outputs.keys()]) if (id.startsWith(prefix)) this.outputs.delete(id);
  }

  /** Context messages [from, to) as the workflow holds them. */
  private async fetch(run: Run, epoch: number, from: number, to: number): Promise<AgentMessage[]> {
    const client = this.client();
    if (!client) throw ApplicationFailure.nonRetryable("The worker has no Temporal client to read a run's context with", "ContextUnavailable");
    const handle = client.workflow.getHandle(run.workflowId, run.runId);
    const out: AgentMessage[] = [];
    while (from + out.length < to) {
      const offset = from + out.length;
      const page = await handle.query(modelContextQuery, { offset, limit: Math.min(PAGE, to - offset) });
      if (page.epoch !== epoch || page.total < to || page.messages.length === 0) {
        throw ApplicationFailure.retryable(`run context changed while reading it (epoch ${page.epoch}, expected ${epoch})`, "ContextUnavailable");
      }
      out.push(...page.messages);
    }
    return out;
  }
}

const key = (run: Run) => `${run.workflowId}/${run.runId}`;

/** The context message the workflow made from a tool activity's output (details stripped). */
function toolResult(ref: ToolResultRef, toolName: string, output: ExecuteToolOutput): ToolResultMessage {
  return { role: "toolResult", toolCallId: ref.toolCallId, toolName, content: output.result.content, isError: output.isError, timestamp: ref.timestamp };
}
