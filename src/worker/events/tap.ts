/**
 * The event tap: a bounded, in-memory log of the AgentEvents of the runs a
 * worker process serves, numbered per workflow id (so continue-as-new is one
 * stream), read by any number of subscribers from any position. Nothing of it
 * is durable or reaches history. Readers pull at their own pace: a slow or
 * vanished reader holds nothing but its own position, and the run never waits
 * for one.
 *
 * Bounds: a run's log never holds more than `maxRunBytes` (each event counted
 * as the UTF-8 bytes of its JSON, as stored), whatever the events are. Past
 * it, first the deltas (message_update, tool_execution_update) of finished
 * streams go, which lose nothing (their message_end / tool_execution_end has
 * it all); then the oldest events, of any kind. An assistant message_start
 * goes with the deltas after it (they cannot be rebuilt without it), and a
 * stream whose start went keeps no further deltas. An event bigger than the
 * whole cap is not kept. Past `maxRuns`, the least recently active runs are
 * forgotten; a forgotten run that comes back numbers on from where it was (the
 * tap remembers that of the last `10 × maxRuns` forgotten runs), with every
 * event before marked lost, so a cursor from before is not served as complete.
 *
 * Resume (`since(after)`) is by sequence number, so a cursor stays valid
 * while events are evicted: it gets every kept event after it. Whether that
 * is all of them is `complete(workflowId, after)`: false once an event after
 * the cursor, other than a delta, was evicted (or never kept). Such a reader
 * has lost events here; the transcript-derived stream (cursor `h<n>`,
 * `handle.transcript()`) still has every message.
 *
 * Repeats: an event whose `eventId` the run's log has had already (a retried
 * workflow task emits its events again, src/node/event-identity.ts) is dropped,
 * so a reader of one tap gets each event once. It takes no sequence number.
 */
import type { AgentEvent, AgentEventSink, AgentRunRef } from "../../shared/contracts.js";
import { EventDeduper } from "../../shared/event-ids.js";
import { deltaEncoder, type SequencedEvent, type WireEvent } from "../../shared/event-wire.js";

export interface EventTapOptions {
  /** Runs kept; the least recently active are forgotten first. Default 500. */
  maxRuns?: number;
  /** Most bytes (UTF-8 JSON of each event as stored) one run's log holds. Default 4 MB. */
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
  /** Entries before this index hold no deltas (the part of the log the last trim already thinned). */
  clean: number;
  /** The stream in progress lost its message_start: its further deltas are not kept. */
  streamLost: boolean;
  /** Highest seq of an event (not a delta) that was evicted or never kept; -1 when none. */
  lostThrough: number;
  /** Tells the events the log had from repeats. */
  seen: EventDeduper;
}

const isDelta = (e: WireEvent) => e.type === "message_update" || e.type === "tool_execution_update";
const isAssistantStart = (e: WireEvent) => e.type === "message_start" && e.message.role === "assistant";

export class EventTap {
  private readonly runs = new Map<string, RunLog>();
  /** Readers waiting on a run the tap holds nothing of yet (a subscriber attached before its first event). */
  private readonly waiting = new Map<string, Set<() => void>>();
  private readonly maxRuns: number;
  private readonly maxRunBytes: number;
  /** The next seq of runs forgotten lately (oldest first): one that comes back must not reuse its numbers. */
  private readonly forgotten = new Map<string, number>();
  /** Events dropped as repeats of one the run's log had (same `eventId`), since the tap was made. */
  repeatsDropped = 0;

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

  /** Sequence number the next event of the run will get (0 for a run the tap never held). */
  head(workflowId: string): number {
    return this.runs.get(workflowId)?.next ?? this.forgotten.get(workflowId) ?? 0;
  }

  /** Bytes the run's log holds now (0 for an unknown run); never more than `maxRunBytes`. */
  bytes(workflowId: string): number {
    return this.runs.get(workflowId)?.bytes ?? 0;
  }

  /**
   * Whether `since(workflowId, after)` gives every event after `after` but
   * deltas of streams whose end it gives (false for an unknown run): a reader
   * resuming from a cursor the tap no longer covers has lost events here.
   */
  complete(workflowId: string, after: number): boolean {
    const log = this.runs.get(workflowId);
    return log !== undefined && log.lostThrough <= after;
  }

  /** Logs an event of the run; one whose `eventId` the run's log had already is a repeat and is dropped. */
  append(run: AgentRunRef & { eventId?: string }, event: AgentEvent): void {
    if (this.runs.get(run.workflowId)?.seen.repeat(run.eventId)) {
      this.repeatsDropped++;
      return;
    }
    let log = this.runs.get(run.workflowId);
    if (log) this.runs.delete(run.workflowId); // re-insert: Map order is recency
    if (!log) {
      // A run forgotten earlier goes on from its last number, and what came before is lost here.
      const first = this.forgotten.get(run.workflowId) ?? 0;
      this.forgotten.delete(run.workflowId);
      log = {
        entries: [],
        next: first,
        bytes: 0,
        encode: deltaEncoder(),
        wake: new Set(),
        streamStart: 0,
        clean: 0,
        streamLost: false,
        lostThrough: first - 1,
        seen: new EventDeduper(),
      };
      log.seen.repeat(run.eventId);
    }
    this.runs.set(run.workflowId, log);
    const early = this.waiting.get(run.workflowId);
    if (early) {
      this.waiting.delete(run.workflowId);
      for (const wake of early) log.wake.add(wake);
    }
    const wire = log.encode(event);
    const seq = log.next++;
    const id = run.eventId;
    // Measured as stored and as served: the UTF-8 bytes of its JSON (and of its id).
    const bytes = Buffer.byteLength(JSON.stringify(wire), "utf8") + (id === undefined ? 0 : Buffer.byteLength(id));
    if (isAssistantStart(wire)) {
      // A new stream: every delta before it belongs to a finished one.
      log.streamStart = log.entries.length;
      log.streamLost = false;
    }
    if (bytes > this.maxRunBytes || (wire.type === "message_update" && log.streamLost)) {
      // Not kept: bigger than the whole cap, or a delta of a stream whose start is gone.
      if (!isDelta(wire)) log.lostThrough = seq;
      if (isAssistantStart(wire)) log.streamLost = true;
    } else {
      log.entries.push({ seq, event: wire, bytes, ...(id === undefined ? {} : { id }) });
      log.bytes += bytes;
      if (log.bytes > this.maxRunBytes) this.trim(log);
    }
    for (const wake of log.wake) wake();
    log.wake.clear();
    while (this.runs.size > this.maxRuns) {
      const oldest = this.runs.keys().next().value as string;
      const gone = this.runs.get(oldest)!;
      this.runs.delete(oldest);
      this.forgotten.set(oldest, gone.next);
      if (this.forgotten.size > 10 * this.maxRuns) this.forgotten.delete(this.forgotten.keys().next().value as string);
      for (const wake of gone.wake) wake();
    }
  }

  private trim(log: RunLog): void {
    // First the deltas of finished streams: their ends carry what they said. (Entries before `clean` have none.)
    if (log.streamStart > log.clean) {
      const kept = log.entries.slice(log.clean, log.streamStart).filter((e) => {
        if (isDelta(e.event)) log.bytes -= e.bytes;
        return !isDelta(e.event);
      });
      log.entries = log.entries.slice(0, log.clean).concat(kept, log.entries.slice(log.streamStart));
      log.streamStart = log.clean + kept.length;
      log.clean = log.streamStart;
    }
    // Then the oldest events, whatever they are, until the log fits.
    let drop = 0;
    while (log.bytes > this.maxRunBytes && drop < log.entries.length) {
      const entry = log.entries[drop++];
      log.bytes -= entry.bytes;
      if (!isDelta(entry.event)) log.lostThrough = Math.max(log.lostThrough, entry.seq);
      if (isAssistantStart(entry.event)) {
        // Its deltas go with it: a reader could not rebuild them.
        while (drop < log.entries.length && log.entries[drop].event.type === "message_update")
          log.bytes -= log.entries[drop++].bytes;
        if (drop > log.streamStart) log.streamLost = true;
      }
    }
    if (drop === 0) return;
    log.entries.splice(0, drop);
    log.streamStart = Math.max(0, log.streamStart - drop);
    log.clean = Math.max(0, log.clean - drop);
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
    return log.entries.slice(lo).map(({ seq, event, id }) => (id === undefined ? { seq, event } : { seq, event, id }));
  }

  /** Resolves when the run gets a new event (its first one, for a run the tap does not hold yet), is forgotten, or `ms` pass. */
  wait(workflowId: string, ms: number): Promise<void> {
    const log = this.runs.get(workflowId);
    const waiting = this.waiting;
    return new Promise((resolve) => {
      // Unref'd: a reader waiting on a quiet run must not keep the process alive on its own.
      const timer = setTimeout(done, ms);
      timer.unref();
      function done() {
        clearTimeout(timer);
        // Wherever it waits now: on the run's log, or (no event yet) on the early list append moves to the log.
        waiting.get(workflowId)?.delete(done);
        if (waiting.get(workflowId)?.size === 0) waiting.delete(workflowId);
        log?.wake.delete(done);
        resolve();
      }
      if (log) log.wake.add(done);
      else {
        const early = waiting.get(workflowId) ?? new Set();
        waiting.set(workflowId, early.add(done));
      }
    });
  }
}
