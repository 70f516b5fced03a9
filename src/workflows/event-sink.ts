/**
 * The workflow's side of the `agent` sink: every event the run's workflow code emits leaves through `emit`,
 * numbered. The number is the event's place among the events this run's workflow code has emitted (0, 1, 2, …):
 * workflow state, computed and never recorded, so a retried workflow task (a timeout, a worker that died before
 * completing it) replays the same code to the same point and gives the events it emits again the numbers they had
 * the first time. The worker turns it into the event's `eventId` (src/node/event-identity.ts), by which a consumer
 * drops the repeat. Module state is per workflow execution (the SDK gives each its own module instances), and a
 * continued run starts again from 0 under its own run id.
 */
import { proxySinks } from "@temporalio/workflow";
import type { AgentEvent } from "../shared/contracts.js";
import type { AgentSinks } from "../shared/definitions.js";

const { agent } = proxySinks<AgentSinks>();

/** Events emitted so far by this run's workflow code, replayed ones included (their sink calls are dropped). */
let emitted = 0;

/** Sends `event` out of the workflow with its number in the run. */
export function emit(event: AgentEvent): void {
  agent.emit(event, emitted++);
}
