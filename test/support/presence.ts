/** What the fast-failover suites share: reading a presence workflow's progress from the server. */
import type { WorkflowHandle } from "@temporalio/client";
import { waitFor } from "./crash/harness.js";

/** Resolves once `presence` has pinged its worker (its heartbeats stopped). */
export const pinged = (presence: WorkflowHandle, ms: number) =>
  waitFor(
    async () =>
      ((await presence.fetchHistory()).events ?? []).some(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "workerPing",
      ),
    ms,
    "the ping",
  );
