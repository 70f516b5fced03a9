/**
 * The event tap: a bounded, in-memory log of the AgentEvents of the runs a
 * worker process serves, numbered per workflow id (so continue-as-new is one
 * stream), read by any number of subscribers from any position. Nothing of it
 * is durable or reaches history. Bounds: a run's deltas (message_update,
 * tool_execution_update) of finished streams are dropped first when its log
 * passes `maxRunBytes`; the least recently active runs are forgotten past
 * `maxRuns`. Readers pull at their own pace: a slow or vanished reader holds
 * nothing but its own position, and the run never waits for one.
 */
import type { AgentEvent, AgentEventSink, AgentRunRef } from "../types.js";
import { deltaEncoder, type SequencedEvent, type WireEvent } from "./wire.js";

export interface EventTapOptions {
  /** Runs kept; the least recently active are forgotten first. Default 500. */
  maxRuns?: number;
  /** Bytes (as JSON) of one run's log before deltas of finished streams are dropped. Default 4 MB. */
  maxRunBytes?: number;
}

interface Entry extends SequencedEvent {
  bytes: number;
}

interface RunLog {
  entries: Entry[];
  next: number;
  bytes: number;
  encode: (event: AgentEvent) => WireEvent;
  wake: Set<() => void>;
  /** Index in entries of the newest assistant message_start: deltas before it belong to finished streams. */
  streamStart: number;
}

const isDelta = (e: WireEvent) => e.type === "message_update" || e.type === "tool_execution_update";

export class EventTap {
  private readonly runs = new Map<string, RunLog>();
  private readonly maxRuns: number;
  private readonly maxRunBytes: number;

  constructor(options: EventTapOptions = {}) {
    this.maxRuns = options.maxRuns ?? 500;
    this.maxRunBytes = options.maxRunBytes ?? 4 * 1024 * 1024;
  }

  /** An onEvent for createAgentWorker that logs every event here, then hands it to `inner`. */
  sink(inner?: AgentEventSink): AgentEventSink {
    return (event, run) => {
      this.append(run, event);
      return inner?.(event, run);
    };
  }

  /** Whether the tap holds events of this run. */
  has(workflowId: string): boolean {
    return this.runs.has(workflowId);
  }

  /** Sequence number the next event of the run will get (0 for an unknown run). */
  head(workflowId: string): number {
    return this.runs.get(workflowId)?.next ?? 0;
  }

  append(run: AgentRunRef, event: AgentEvent): void {
    let log = this.runs.get(run.workflowId);
    if (log) this.runs.delete(run.workflowId); // re-insert: Map order is recency
    log ??= { entries: [], next: 0, bytes: 0, encode: deltaEncoder(), wake: new Set(), streamStart: 0 };
    this.runs.set(run.workflowId, log);
    const wire = log.encode(event);
    const bytes = JSON.stringify(wire).length;
    if (wire.type === "message_start" && wire.message.role === "assistant") log.streamStart = log.entries.length;
    log.entries.push({ seq: log.next++, event: wire, bytes });
    log.bytes += bytes;
    if (log.bytes > this.maxRunBytes) this.trim(log);
    for (const wake of log.wake) wake();
    log.wake.clear();
    while (this.runs.size > this.maxRuns) {
      const oldest = this.runs.keys().next().value as string;
      const gone = this.runs.get(oldest)!;
      this.runs.delete(oldest);
      for (const wake of gone.wake) wake();
    }
  }

  private trim(log: RunLog): void {
    // Only deltas of finished streams go: durable events stay, and so does the stream in progress.
    const before = log.entries.slice(0, log.streamStart).filter((e) => !isDelta(e.event));
    log.entries = [...before, ...log.entries.slice(log.streamStart)];
    log.streamStart = before.length;
    log.bytes = log.entries.reduce((n, e) => n + e.bytes, 0);
  }

  /** Events of the run with seq > after, now; [] for an unknown run. */
  since(workflowId: string, after: number): SequencedEvent[] {
    const log = this.runs.get(workflowId);
    if (!log) return [];
    let lo = 0;
    let hi = log.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (log.entries[mid].seq <= after) lo = mid + 1;
      else hi = mid;
    }
    return log.entries.slice(lo).map(({ seq, event }) => ({ seq, event }));
  }

  /** Resolves when the run gets a new event, is forgotten, or `ms` pass. */
  wait(workflowId: string, ms: number): Promise<void> {
    const log = this.runs.get(workflowId);
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        log?.wake.delete(done);
        resolve();
      }
      log?.wake.add(done);
    });
  }
}
