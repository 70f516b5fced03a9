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
 *
 * The cache is bounded in bytes. Runs take turns in rotation, the worst case
 * for LRU (past its capacity every call misses), so eviction follows the
 * access pattern instead: each entry learns how often its run comes back, and
 * the entry whose next use lies furthest away goes first (Belady's rule, as
 * well as it can be predicted). Under rotation that keeps a stable set of runs
 * cached instead of none; entries overdue by far (finished or idle runs) and
 * runs whose last answer ended them go before any active one.
 */
import { createHash } from "node:crypto";
import type { Client } from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import type { ToolResultMessage } from "@jai/ai";
import type { AgentMessage } from "../../shared/contracts.js";
import type { ExecuteToolOutput, ModelContextRef, ToolResultRef } from "../../shared/wire.js";
import { combineDigests, messageDigest } from "../../shared/context-digest.js";
import { modelContextQuery } from "../../shared/definitions.js";
import { FailureType } from "../../shared/failure-types.js";
import { toolResultMessage } from "../../shared/tool-result.js";

/** Default byte budget of a worker's context cache (JSON bytes of the cached messages and tool outputs). */
export const DEFAULT_CONTEXT_CACHE_BYTES = 256 * 1024 * 1024;

/** Tool outputs waiting for their run's next model call may use at most this share of the budget. */
const OUTPUT_SHARE = 0.125;
/** An entry not used for this many of its own usual intervals counts as idle (a finished or parked run). */
const OVERDUE_INTERVALS = 3;

interface Entry {
  epoch: number;
  messages: AgentMessage[];
  bytes: number;
  /** Tick of the last use. */
  lastUse: number;
  /** Ticks between this run's uses, smoothed; undefined until it came back once. */
  interval?: number;
  /** The last reply ended the run's loop (no tool calls): it may never be used again. */
  ended: boolean;
}

interface Output {
  toolName: string;
  output: ExecuteToolOutput;
  bytes: number;
}

/** Messages asked for per query page; the workflow also cuts pages at ~1 MB. */
const PAGE = 500;

type Run = { workflowId: string; runId: string };

/** Node's SHA-256: the same digest as the workflow's plain-JavaScript one, faster. */
const nodeSha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

// Cached messages are never changed in place and are reused call after call: each is hashed once, not on every call.
const messageDigests = new WeakMap<object, string>();

/** The digest a worker computes over a context it assembled (the workflow computes the same over what it recorded). */
export const workerContextDigest = (messages: AgentMessage[]) =>
  combineDigests(
    messages.map((m) => {
      let digest = messageDigests.get(m);
      if (digest === undefined) messageDigests.set(m, (digest = messageDigest(m, nodeSha256)));
      return digest;
    }),
    nodeSha256,
  );

/** Bounds of a worker's context cache. */
export interface ContextCacheOptions {
  /** Byte budget (JSON bytes of cached messages and tool outputs); default 256 MB. 0 disables the cache. */
  maxBytes?: number;
  /** At most this many runs, whatever their size; default unlimited. 0 disables the cache. */
  maxRuns?: number;
  /** Told, for each call with a prefix, whether the cached one was used (metrics). */
  onLookup?: (hit: boolean) => void;
}

/** What the cache did, for metrics (`AgentWorker.cacheStats()`). Counters only grow; `bytes`/`runs` are current. */
export interface ContextCacheStats {
  /** Model calls (and worker compactions) whose context was resolved here. */
  lookups: number;
  /** Lookups whose earlier context (the prefix the workflow assumed this worker holds) came from the cache. */
  hits: number;
  /** Lookups whose earlier context had to be read, wholly or partly, from the workflow. */
  misses: number;
  /** `hits / (hits + misses)`; 1 when nothing was looked up yet. */
  hitRate: number;
  /** Tool results passed by reference that this worker did not hold (the tool ran elsewhere) and read from the workflow. */
  refReads: number;
  /** Times an assembled context differed from the recorded one and was read again from the workflow. */
  mismatches: number;
  /** `modelContext` queries sent, and the JSON bytes of the messages they returned. */
  queries: number;
  queryBytes: number;
  /** Bytes held now (contexts and tool outputs), and the budget. */
  bytes: number;
  maxBytes: number;
  /** Runs whose context is held now. */
  runs: number;
  /** Run contexts and tool outputs dropped to stay within the budget. */
  evictions: number;
  outputEvictions: number;
}

// Context messages are shared between a run's successive entries and never changed: size each once.
const sizes = new WeakMap<object, number>();
function messageBytes(message: AgentMessage): number {
  let size = sizes.get(message);
  if (size === undefined) sizes.set(message, (size = JSON.stringify(message).length));
  return size;
}
const sumBytes = (messages: AgentMessage[]) => messages.reduce((n, m) => n + messageBytes(m), 0);

export class ContextCache {
  private entries = new Map<string, Entry>();
  /** Outputs of the tool activities this worker ran, per run by activity id (oldest run first), for model calls that pass them by reference. */
  private outputs = new Map<string, Map<string, Output>>();
  private entryBytes = 0;
  private outputBytes = 0;
  /** Logical clock: one tick per lookup or remember. */
  private tick = 0;
  /** Smoothed interval over all runs, for entries that have not come back yet. */
  private typicalInterval?: number;
  private counters = {
    lookups: 0,
    hits: 0,
    misses: 0,
    refReads: 0,
    mismatches: 0,
    queries: 0,
    queryBytes: 0,
    evictions: 0,
    outputEvictions: 0,
  };
  private readonly maxBytes: number;
  private readonly maxRuns: number;
  private readonly onLookup: (hit: boolean) => void;

  constructor(
    private readonly client: () => Client | undefined,
    options: ContextCacheOptions = {},
  ) {
    this.maxBytes = options.maxBytes ?? DEFAULT_CONTEXT_CACHE_BYTES;
    this.maxRuns = options.maxRuns ?? Infinity;
    this.onLookup = options.onLookup ?? (() => {});
  }

  /** A snapshot of the counters and sizes. */
  get stats(): ContextCacheStats {
    const c = this.counters;
    return {
      ...c,
      hitRate: c.hits + c.misses === 0 ? 1 : c.hits / (c.hits + c.misses),
      bytes: this.entryBytes + this.outputBytes,
      maxBytes: this.maxBytes,
      runs: this.entries.size,
    };
  }

  /** The full context of a call, exactly the one the workflow recorded (checked against `ref.digest`). */
  async resolve(run: Run, ref: ModelContextRef, onMismatch?: (why: string) => void): Promise<AgentMessage[]> {
    const messages = await this.assemble(run, ref);
    if (ref.digest === undefined || workerContextDigest(messages) === ref.digest) return messages;
    // Something this worker holds is not what history holds: forget it and read the recorded context.
    this.counters.mismatches++;
    onMismatch?.(
      `the context assembled from this worker's cache differs from the recorded one (${messages.length} messages); reading it from the workflow`,
    );
    this.forget(run);
    const recorded = await this.fetch(run, ref.epoch, 0, ref.base + ref.append.length);
    if (workerContextDigest(recorded) === ref.digest) return recorded;
    throw ApplicationFailure.retryable(
      `the run's context read from the workflow does not match the digest of the call (${recorded.length} messages, epoch ${ref.epoch})`,
      FailureType.ContextMismatch,
    );
  }

  /** Cached prefix (or the workflow's, on a miss) plus what the call appends. */
  private async assemble(run: Run, ref: ModelContextRef): Promise<AgentMessage[]> {
    this.tick++;
    this.counters.lookups++;
    const entry = this.entries.get(key(run));
    let prefix: AgentMessage[];
    if (ref.base === 0) prefix = [];
    else if (entry && entry.epoch === ref.epoch && entry.messages.length <= ref.base) {
      this.onLookup(true);
      // A hit, possibly short of messages that were too big to ride along: read only those.
      if (entry.messages.length === ref.base) {
        this.counters.hits++;
        prefix = entry.messages;
      } else {
        this.counters.misses++;
        prefix = entry.messages.concat(await this.fetch(run, ref.epoch, entry.messages.length, ref.base));
      }
    } else {
      this.counters.misses++;
      this.onLookup(false);
      prefix = await this.fetch(run, ref.epoch, 0, ref.base);
    }
    return prefix.concat(await this.resolveAppend(run, ref));
  }

  /** Remembers a tool activity's output (as the workflow will receive it, if this attempt is the one recorded). */
  rememberOutput(run: Run, activityId: string, toolName: string, output: ExecuteToolOutput): void {
    if (this.maxBytes <= 0 || this.maxRuns <= 0) return;
    const copy = JSON.parse(JSON.stringify(output)) as ExecuteToolOutput;
    const bytes = JSON.stringify(copy.result.content).length;
    const k = key(run);
    const forRun = this.outputs.get(k) ?? new Map<string, Output>();
    // The run moves to the newest end: eviction takes the runs that have not used a tool for longest.
    this.outputs.delete(k);
    this.outputs.set(k, forRun);
    const previous = forRun.get(activityId);
    if (previous) this.outputBytes -= previous.bytes;
    forRun.set(activityId, { toolName, output: copy, bytes });
    this.outputBytes += bytes;
    while (this.outputBytes > this.maxBytes * OUTPUT_SHARE && this.evictOldestOutput());
    this.trim();
  }

  /** Inline messages as they are; references from this worker's outputs, the rest read from the workflow in one go. */
  private async resolveAppend(run: Run, ref: ModelContextRef): Promise<AgentMessage[]> {
    const forRun = this.outputs.get(key(run));
    const out: (AgentMessage | undefined)[] = ref.append.map((entry) => {
      if ("role" in entry) return entry; // a message (references have no role)
      // User messages by reference are in the workflow's history, not here: read with the rest.
      if (entry.ref !== "toolResult" || entry.activityId === undefined) return undefined;
      const known = forRun?.get(entry.activityId);
      return known ? toolResult(entry, known.toolName, known.output) : undefined;
    });
    const firstMissing = out.indexOf(undefined);
    if (firstMissing >= 0) {
      this.counters.refReads += out.filter((m) => m === undefined).length;
      const read = await this.fetch(run, ref.epoch, ref.base + firstMissing, ref.base + ref.append.length);
      for (let i = firstMissing; i < out.length; i++) out[i] ??= read[i - firstMissing];
    }
    return out as AgentMessage[];
  }

  /**
   * Remembers a call's context and the reply the workflow will append to it (if this attempt is the one recorded).
   * `ended`: the reply ends the run's loop, so the entry is the first to go when room is needed.
   */
  remember(run: Run, epoch: number, messages: AgentMessage[], ended = false): void {
    if (this.maxBytes <= 0 || this.maxRuns <= 0) return;
    this.tick++;
    const k = key(run);
    const old = this.entries.get(k);
    let interval = old?.interval;
    if (old) {
      this.entryBytes -= old.bytes;
      const gap = this.tick - old.lastUse;
      interval = interval === undefined ? gap : (interval + gap) / 2;
      this.typicalInterval = this.typicalInterval === undefined ? gap : this.typicalInterval * 0.9 + gap * 0.1;
    }
    const entry: Entry = { epoch, messages, bytes: sumBytes(messages), lastUse: this.tick, interval, ended };
    this.entries.set(k, entry);
    this.entryBytes += entry.bytes;
    // Its tool outputs are in the context now: the run's next tools add new ones.
    this.dropOutputs(k);
    this.trim();
  }

  /** Evicts until within bounds: tool outputs beyond their share first, then the entries predicted to be needed last. */
  private trim(): void {
    while (this.entries.size > this.maxRuns || this.entryBytes + this.outputBytes > this.maxBytes) {
      if (this.outputBytes > this.maxBytes * OUTPUT_SHARE || this.entries.size === 0) {
        if (!this.evictOldestOutput()) return;
        continue;
      }
      const victim = this.victim();
      if (!victim) return;
      this.entryBytes -= this.entries.get(victim)!.bytes;
      this.entries.delete(victim);
      this.counters.evictions++;
    }
  }

  /** The entry whose next use is furthest away: idle and ended runs first (longest idle first), else the largest predicted next use. */
  private victim(): string | undefined {
    let best: string | undefined;
    let bestScore = -Infinity;
    const typical = this.typicalInterval ?? 1;
    for (const [k, e] of this.entries) {
      const interval = e.interval ?? typical;
      const idle = this.tick - e.lastUse;
      // Ranks: ended or overdue runs above any active one (by how long they have been idle), active ones by predicted next use.
      const score = e.ended || idle > OVERDUE_INTERVALS * interval ? 2 ** 50 + idle : e.lastUse + interval;
      if (score > bestScore) {
        bestScore = score;
        best = k;
      }
    }
    return best;
  }

  private evictOldestOutput(): boolean {
    const oldest = this.outputs.entries().next().value;
    if (!oldest) return false;
    const [k, forRun] = oldest;
    const first = forRun.entries().next().value;
    if (first) {
      forRun.delete(first[0]);
      this.outputBytes -= first[1].bytes;
      this.counters.outputEvictions++;
    }
    if (forRun.size === 0) this.outputs.delete(k);
    return true;
  }

  private dropOutputs(k: string): void {
    const forRun = this.outputs.get(k);
    if (!forRun) return;
    for (const o of forRun.values()) this.outputBytes -= o.bytes;
    this.outputs.delete(k);
  }

  /** Drops everything cached for a run. */
  private forget(run: Run): void {
    const k = key(run);
    const entry = this.entries.get(k);
    if (entry) {
      this.entryBytes -= entry.bytes;
      this.entries.delete(k);
    }
    this.dropOutputs(k);
  }

  /** Context messages [from, to) as the workflow holds them. */
  private async fetch(run: Run, epoch: number, from: number, to: number): Promise<AgentMessage[]> {
    const client = this.client();
    if (!client)
      throw ApplicationFailure.nonRetryable(
        "The worker has no Temporal client to read a run's context with",
        FailureType.ContextUnavailable,
      );
    const handle = client.workflow.getHandle(run.workflowId, run.runId);
    const out: AgentMessage[] = [];
    while (from + out.length < to) {
      const offset = from + out.length;
      const page = await handle.query(modelContextQuery, { offset, limit: Math.min(PAGE, to - offset) });
      this.counters.queries++;
      if (page.epoch !== epoch || page.total < to || page.messages.length === 0) {
        throw ApplicationFailure.retryable(
          `run context changed while reading it (epoch ${page.epoch}, expected ${epoch})`,
          FailureType.ContextUnavailable,
        );
      }
      this.counters.queryBytes += sumBytes(page.messages);
      out.push(...page.messages);
    }
    return out;
  }
}

const key = (run: Run) => `${run.workflowId}/${run.runId}`;

/** The context message the workflow made from a tool activity's output (details stripped). */
function toolResult(ref: ToolResultRef, toolName: string, output: ExecuteToolOutput): ToolResultMessage {
  return toolResultMessage(ref.toolCallId, toolName, output, ref.timestamp, true);
}
