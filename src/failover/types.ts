/**
 * What a worker's presence workflow carries: plain JSON between the workflow, the worker that is watched and the
 * worker that fails over for it. Internal wire types.
 */

/** One activity attempt running on the watched worker, by the ids Temporal fails it by. */
export interface HeldCall {
  workflowId: string;
  runId: string;
  activityId: string;
  /** The attempt running there: a later one (a retry on another worker) is not failed. */
  attempt: number;
}

/** A run whose workflow tasks the watched worker ran lately (it may hold the run in its sticky cache). */
export interface HeldRun {
  workflowId: string;
  runId: string;
}

/** The watched worker's last heartbeat: what it had in hand. */
export interface PresenceReport {
  calls: HeldCall[];
  runs: HeldRun[];
  /** The fleet's workers this one has a link to (their own queues): the ones it tells when their link closes. */
  links?: string[];
  /**
   * How many of the fleet's workers hold a link to this one (with links on). None: no link can tell its death,
   * so a silence is not given the patient ping a linked worker gets. Absent (an older worker): taken as linked.
   */
  linkedBy?: number;
  /**
   * The identities its pollers give the server. An attempt the server says one of them started and no report
   * names was handed to the worker's last polls as it died: it is failed too.
   */
  identities?: string[];
}

/** The presence workflow's input. */
export interface PresenceInput {
  /** The watched worker's own task queue (its routed model calls): what names it, what a survivor polls for it. */
  workerQueue: string;
  /** The queue only the watched worker's presence activity and pings run on, so they run nowhere else. */
  presenceQueue: string;
  /** No heartbeat from the worker for this long and it is taken for dead. */
  timeoutMs: number;
  /** The presence activity ends after this long and the workflow continues as new (keeps each history small). */
  renewAfterMs: number;
  /**
   * The worker has links to its peers (src/failover/links.ts), which tell its death at once: its ping, then only
   * for a worker that hangs or is cut off, is given more time, so an overloaded worker is not taken for dead. Not
   * after a silence whose last report says no peer holds a link to it (`linkedBy`): nothing else could tell.
   */
  linked?: boolean;
}

/** News from a peer whose link to the watched worker closed (src/failover/links.ts): the presence workflow's signal. */
export interface WorkerLost {
  /**
   * What the peer found at the worker's address: "refused" or "replaced" (the worker is gone: it is failed over at
   * once) or "closed" (it is pinged at once, and failed over if it does not answer).
   */
  evidence: "refused" | "replaced" | "closed";
  /** The peer's own queue. */
  by: string;
  /**
   * HMAC of the news with the fleet's secret (`fastFailover.secret`), bound to the presence workflow told: only
   * news that proves it is taken for sure ("refused", "replaced"); any other is taken as "closed" (the worker is
   * pinged, and failed over only if it does not answer).
   */
  mac?: string;
}

/** How a presence activity ended on a live worker. */
export type PresenceEnd = "renew" | "stopped";

/** What the fail-over did for a worker taken for dead. */
export interface FailoverResult {
  /** Its calls failed with a heartbeat timeout (Temporal retries them, or the run sends them elsewhere). */
  callsFailed: number;
  /** Its runs whose sticky queue was cleared (their next workflow task goes to any worker at once). */
  runsUnstuck: number;
  /** The worker that failed over polls the dead one's own queue for a while (its runs' next model calls). */
  queueAdopted: boolean;
  /**
   * No report could be read from the server (the presence activity had timed out, and its timeout was not in the
   * history yet: the server adds it once the fail-over's own task ends). The workflow fails over again with the
   * report the timeout carries.
   */
  reportMissing?: boolean;
}

/** The presence workflow's result. */
export interface PresenceOutcome {
  /**
   * "stopped": the worker shut down; "lost": it stopped heartbeating and did not answer a ping on its queue, and
   * was failed over; "alive": its heartbeats stopped but it answered (nothing was failed over).
   */
  worker: "stopped" | "lost" | "alive";
  /** How a lost worker was found out: its heartbeats stopped, or a peer's link to it closed (`WorkerLost`). */
  lostBy?: "heartbeats" | "link";
  failover?: FailoverResult;
}
