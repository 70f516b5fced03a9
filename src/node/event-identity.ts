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
 * Telling a repeat from a new event by these ids: `EventDeduper` (src/shared/event-ids.ts).
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
