/**
 * Telling a repeated event from a new one by its `eventId` (docs/streaming.md "Repeats"; the id's two forms:
 * src/node/event-identity.ts). Pure, so every consumer runs the one rule: the event tap, `handle.events()` and
 * the console's page (bundled into its script). The events of one emitter reach a sink in the order of n,
 * so a repeat is an event whose n is not above the highest seen of its emitter (and, for the workflow's, whose
 * digest is the one seen at that n): `EventDeduper` keeps that per emitter.
 */

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
