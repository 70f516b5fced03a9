/**
 * An event's identity (`eventId`, docs/streaming.md "Repeats"): the same for the same event of a run however
 * often it is delivered, different for different events. Two forms, both starting with the Temporal run id (so
 * the ids of a continue-as-new chain, one stream per workflow id, never collide) and naming the event's place
 * among the events of one emitter:
 *
 * - `<runId>/<n>.<digest>`: the n-th event the run's workflow code emitted (workflows/event-sink.ts), and a
 *   digest of what it says but its timestamps. A workflow task retried after a timeout replays to where it was
 *   and emits the same events with the same n; their timestamps (the workflow's clock: the retried task's start)
 *   may differ, nothing else. A task the server refused because an event arrived as it completed
 *   (UnhandledCommand) is retried with that event and may take another path from where it was: what it emits
 *   then at an n already used says something else, so it has another digest, and is a new event.
 * - `<runId>/<activityId>@<attempt>/<n>`: the n-th event an attempt of an activity emitted (token deltas, tool
 *   progress, a model's message_start). A retried activity is a new attempt: its events are new events (a model
 *   call streams again). A local activity run again by a retried workflow task has the same id and attempt, and
 *   its events the same ids.
 *
 * The events of one emitter reach a sink in the order of n, so a repeat is an event whose n is not above the
 * highest seen of its emitter (and, for the workflow's, whose digest is the one seen at that n):
 * `EventDeduper` keeps that per emitter.
 */
import { createHash, randomUUID } from "node:crypto";
import type { AgentEvent } from "../shared/contracts.js";

/** What an event says but its timestamps (which a retried task restamps), as 8 characters. */
function digest(event: AgentEvent): string {
  // A key's quote is never escaped in JSON text, a quote inside a string always is: only keys match.
  const text = JSON.stringify(event).replace(/"timestamp":-?[\d.eE+-]+/g, '"timestamp":0');
  return createHash("sha1").update(text).digest("base64url").slice(0, 8);
}

/** Id of the `seq`-th event (`event`) the workflow code of run `runId` emitted. */
export function workflowEventId(runId: string, seq: number | undefined, event: AgentEvent): string {
  // A workflow bundle built before events were numbered passes no seq: an id of its own, never taken for a repeat.
  return seq === undefined ? `${runId}/${randomUUID()}@0/0` : `${runId}/${seq}.${digest(event)}`;
}

/** Id of the `n`-th event an activity's attempt emitted. */
export function activityEventId(runId: string, activityId: string, attempt: number, n: number): string {
  return `${runId}/${activityId}@${attempt}/${n}`;
}

/**
 * The emitter of an event, its place among the emitter's events and (the workflow's events) its digest;
 * undefined for an id of no known form (a transcript position, `h<n>`).
 */
export function parseEventId(id: string): { emitter: string; n: number; digest?: string } | undefined {
  const slash = id.lastIndexOf("/");
  const m = slash > 0 ? /^(\d+)(?:\.([\w-]+))?$/.exec(id.slice(slash + 1)) : null;
  if (!m) return undefined;
  // `<runId>` (the run's workflow code) or `<runId>/<activityId>@<attempt>`.
  return { emitter: id.slice(0, slash), n: Number(m[1]), ...(m[2] ? { digest: m[2] } : {}) };
}

/** The digests of an emitter's last events kept to tell a repeat from another path's event at the same n. */
const DIGESTS_KEPT = 1024;

interface Emitter {
  highest: number;
  /** n → digest, for the last DIGESTS_KEPT places (the workflow's events only). */
  digests: Map<number, string>;
}

/**
 * Tells repeats from new events by their ids, for the `maxEmitters` emitters seen last (the run's workflow code
 * stays among them: it emits between every two activities; a repeat arrives right after its first delivery, a
 * workflow task retried, long before its emitter could be forgotten). An event at or below its emitter's highest
 * place is a repeat, unless its digest differs from the one seen there (another path of a refused task: a new
 * event, which takes that place). Ids of no known form are never repeats.
 */
export class EventDeduper {
  private readonly emitters = new Map<string, Emitter>();

  constructor(private readonly maxEmitters = 256) {}

  /** True when an event with this id was seen already (it is dropped); false, and remembered, when it is new. */
  repeat(id: string | undefined): boolean {
    const parsed = id === undefined ? undefined : parseEventId(id);
    if (!parsed) return false;
    const { emitter: key, n, digest } = parsed;
    let emitter = this.emitters.get(key);
    if (emitter) this.emitters.delete(key); // re-insert: Map order is recency
    emitter ??= { highest: -1, digests: new Map() };
    this.emitters.set(key, emitter);
    if (this.emitters.size > this.maxEmitters) this.emitters.delete(this.emitters.keys().next().value as string);
    if (n <= emitter.highest) {
      const before = emitter.digests.get(n);
      if (digest === undefined || before === undefined || before === digest) return true;
    }
    emitter.highest = Math.max(emitter.highest, n);
    if (digest !== undefined) {
      // In place for a place seen (Map order stays the order of n: a place below the highest is never added).
      emitter.digests.set(n, digest);
      for (const [kept] of emitter.digests) {
        if (kept > emitter.highest - DIGESTS_KEPT) break;
        emitter.digests.delete(kept);
      }
    }
    return false;
  }
}
