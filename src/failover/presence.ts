/**
 * Fast failover: a SIGKILLed worker's runs go on within a second or so when its peers' links see it die, else
 * within about two presence timeouts (1 s each by default).
 *
 * Without it, each of a dead worker's runs waits out its own call's heartbeat timeout, then ~1 s for the dead
 * worker's sticky queue, and then its turn in the replays every survivor does at once: on a 3-worker fleet with
 * headroom the slowest runs lost 10 s against the 5 s heartbeat (docs/lab/scaling.md).
 *
 * With it, every worker runs a presence workflow (on the fleet queue, `fleetTaskQueue()`: only presence workflows
 * run there, so a saturated shared queue cannot delay a failover) whose one activity runs on a small queue
 * of the worker's own (its presence queue, nothing else runs there) and heartbeats, every 0.5 s and as soon as a
 * call starts, the activity attempts the worker is running and the runs whose workflow tasks it ran in the last
 * minute. When the heartbeats stop, the workflow pings the worker on that queue; if it does not answer either, a
 * survivor clears those runs' sticky queues and fails those attempts by id with a heartbeat timeout (only the
 * attempt the worker reported, still running): to the run, exactly what the server would have said a few seconds
 * later (a routed model call goes to the shared queue, a tool call is retried by Temporal). Sooner still when a
 * peer's link to the worker closes and nothing is left at its address (src/failover/links.ts): the first survivor
 * fails it over at once, with its last report read from the server, and its presence workflow does again after
 * (finding nothing left to fail). The survivor also
 * polls the dead worker's own queue for a while. A worker whose presence ended while it lives (it was only late,
 * or a renewal was lost) starts a new one as soon as it hears (at most one per `RESTART_GAP_MS`), else within
 * `WATCHDOG_MS` + `UNWATCHED_MS`.
 */
import { Context, type Info } from "@temporalio/activity";
import { type Client } from "@temporalio/client";
import {
  ApplicationFailure,
  CancelledFailure,
  msToNumber,
  TimeoutFailure,
  TimeoutType,
  type Duration,
  type Payload,
} from "@temporalio/common";
import { decodePayloads, encodePayloads } from "../codec/history.js";
import { timestampMs } from "../history-story.js";
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  Next,
} from "@temporalio/worker";
import { WORKER_PRESENCE_WORKFLOW, workerLostSignal } from "./presence-workflow.js";
import {
  isLinkAddress,
  macMatches,
  macOf,
  MIN_SECRET_LENGTH,
  PeerLinks,
  type LinkAddress,
  type LinkEvidence,
  type LinkOptions,
  type LinkPeer,
} from "./links.js";
import type {
  FailoverResult,
  HeldCall,
  HeldRun,
  PresenceEnd,
  PresenceInput,
  PresenceReport,
  WorkerLost,
} from "./types.js";

export type { PresenceOutcome } from "./types.js";
export { WORKER_PRESENCE_WORKFLOW };

/**
 * Default presence timeout: how long after its last heartbeat a worker is pinged on its own queue, and how long
 * the ping waits before the worker is taken for dead (at 1 s with no ping, a loaded 2-core machine once took five
 * live workers for dead in a row, and each false failover's replays loaded the others more).
 */
export const DEFAULT_PRESENCE_TIMEOUT = "1s";
/** The presence activity ends after this long and its workflow continues as new. */
const RENEW_AFTER_MS = 60 * 60 * 1000;
/** How often the presence activity reports when nothing changes (at most: twice per presence timeout). */
const BEAT_MS = 500;
/**
 * The shortest presence timeout: two beats in it, each past the presence queue's 100 ms heartbeat throttle. (A
 * timeout under the beat took every live worker for late: only its ping kept it from being failed over.)
 */
const MIN_PRESENCE_TIMEOUT_MS = 250;
/**
 * The own queue's heartbeat throttle with fast failover: a call that starts is in the report that reaches the
 * server within this (a call started after the last report would wait out its own heartbeat timeout).
 */
export const PRESENCE_THROTTLE = "100ms";
/** Activity slots of the presence queue's worker (its presence activity and pings), and workflow task and local activity slots of the fleet queue's. */
export const PRESENCE_SLOTS = 4;

/**
 * The queue of the fleet's presence workflows, polled by every fast-failover worker of `taskQueue` with a small
 * workflow worker of its own. Not the shared queue: at saturation a presence's workflow tasks waited there behind
 * hundreds of runs' and a failover finished 9.5 s after the kill instead of ~3 s.
 */
export const fleetTaskQueue = (taskQueue: string) => `${taskQueue}-fleet`;
/**
 * A run not seen on this worker for this long is not reported: it has likely moved, or waits (for a tool, a
 * person) with no workflow task due, and its next one loses at most the 1 s sticky timeout.
 */
const RUN_FORGOTTEN_MS = 60 * 1000;
/** At most this many runs in a report (the most recent): ~110 bytes each, so a heartbeat stays under ~110 KB. */
const MAX_REPORTED_RUNS = 1000;
/** How often a worker checks that its presence activity runs, and how long without one before it starts another. */
const WATCHDOG_MS = 5000;
const UNWATCHED_MS = 10_000;
/** The least time between two presences a worker starts when its last was given up (`givenUp`). */
const RESTART_GAP_MS = 5000;
/** How often a worker lists the fleet's presences to link to new workers (and drop the ones that left). */
const LINK_DISCOVERY_MS = 3000;
/** At most this many dead workers' queues polled at once by one worker. */
const MAX_ADOPTED = 4;
/**
 * Clears and fails at most this many runs at once: a dead worker's hundreds of runs must not flood the server,
 * but its runs wait for this (at 16, sequential per run, 50 runs took 1.7 s with headroom and 2.6 s at saturation).
 */
const FAILOVER_CONCURRENCY = 64;
/**
 * A worker that learns a peer died also reads the runs it ran a workflow task of in this window: a call one of
 * them scheduled just before the death may have gone to the dead worker's last polls (as the server saw them).
 */
const HANDED_WINDOW_MS = 10_000;
/** What a presence's memo may hold at most: a task queue name's length, and its identities. */
const MAX_QUEUE_NAME = 1000;
const MAX_IDENTITIES = 16;
const MAX_IDENTITY = 512;

/** A presence's memo as it is written (and proven, with a secret): what the fleet links to a worker by. */
interface PresenceMemo {
  workerQueue: string;
  links?: LinkAddress;
  identities?: string[];
  /** HMAC of the rest and the presence's workflow id with the fleet's secret (`presenceMemoMac`). */
  mac?: string;
}

/** The MAC a presence's memo carries with a secret: bound to its workflow id, so it proves nothing elsewhere. */
export const presenceMemoMac = (secret: string, workflowId: string, memo: Omit<PresenceMemo, "mac">) =>
  macOf(secret, "presence-memo", [workflowId, memo.workerQueue, memo.links ?? null, memo.identities ?? []]);

/** The MAC news of a lost worker carries with a secret: bound to the presence workflow told. */
export const workerLostMac = (secret: string, presenceWorkflowId: string, news: { evidence: string; by: string }) =>
  macOf(secret, "worker-lost", [presenceWorkflowId, news.evidence, news.by]);

/**
 * A presence's memo as read from the server (anyone who can start a workflow can write one): well formed and, with
 * a `secret`, proven for `workflowId`; else undefined.
 */
export function trustedMemo(memo: unknown, workflowId: string, secret: string | undefined): PresenceMemo | undefined {
  const m = memo as Partial<PresenceMemo> | null | undefined;
  if (typeof m !== "object" || m === null) return undefined;
  if (typeof m.workerQueue !== "string" || m.workerQueue.length === 0 || m.workerQueue.length > MAX_QUEUE_NAME)
    return undefined;
  if (m.links !== undefined && !isLinkAddress(m.links)) return undefined;
  if (
    m.identities !== undefined &&
    !(
      Array.isArray(m.identities) &&
      m.identities.length <= MAX_IDENTITIES &&
      m.identities.every((id) => typeof id === "string" && id.length > 0 && id.length <= MAX_IDENTITY)
    )
  )
    return undefined;
  const trusted: PresenceMemo = {
    workerQueue: m.workerQueue,
    ...(m.links ? { links: { host: m.links.host, port: m.links.port } } : {}),
    ...(m.identities ? { identities: [...m.identities] } : {}),
  };
  if (secret !== undefined && !macMatches(presenceMemoMac(secret, workflowId, trusted), m.mac)) return undefined;
  return trusted;
}

const key = (c: HeldCall) => `${c.workflowId}\u0000${c.runId}\u0000${c.activityId}\u0000${c.attempt}`;

/**
 * What one worker has in hand, reported by its presence activity: the activity attempts running on it (both its
 * queues) and the runs whose workflow tasks it ran lately (the loop's `extensions.runSeen` sink, also called on replay).
 */
export class WorkerPresence {
  /** The small queue only this worker's presence activity and pings run on. */
  readonly presenceQueue: string;
  /** Set by the worker: whether it is shutting down (its presence ends then, not at the end of the drain). */
  stopping: () => boolean = () => false;
  private readonly calls = new Map<string, HeldCall>();
  private readonly runs = new Map<string, HeldRun & { seenAt: number }>();
  private attempt = 0;
  private wake?: () => void;
  private adopter?: (queue: string) => Promise<void>;
  private readonly adopted = new Set<string>();
  /** Presence activities running here (one, or two for a moment when a new one starts as a given-up one ends). */
  private beating = 0;
  /** Starts a new presence (set by `watch()`). */
  private restart?: () => void;
  private lastBeatAt = 0;
  private watchdog?: ReturnType<typeof setInterval>;
  private discovery?: ReturnType<typeof setInterval>;
  /** Set by `watch()`: the client news of a lost peer goes through. */
  private client?: Client;
  /** Between `watch()` and `unwatch()`. */
  private watching = false;
  /** This worker's links to the fleet's other workers (src/failover/links.ts), unless turned off. */
  readonly links?: PeerLinks;
  /** Set by the worker: the identities its pollers give the server (`PresenceReport.identities`). */
  identities: string[] = [];
  /** The fleet's other workers at the last listing (links on); never this one. */
  private fleetPeers: LinkPeer[] = [];
  /** The fleet's shared secret (`fastFailover.secret`): proves links, memos and news. */
  readonly secret?: string;
  /** When this worker last started a presence (`watch()`'s start), ms. */
  private startedAt = 0;
  /** A restart `givenUp()` put off (presences started too close together). */
  private restartTimer?: ReturnType<typeof setTimeout>;

  constructor(
    /** The worker's own queue (its routed model calls): what names it, and what a survivor polls once it died. */
    readonly workerQueue: string,
    /** Heartbeat timeout of the presence activity, and how long its ping waits, ms. */
    readonly timeoutMs: number,
    /** Links to the fleet's other workers (`fastFailover.links`): `false` for none. */
    links: LinkOptions | false = {},
    /**
     * The fleet's shared secret (`fastFailover.secret`): links prove it both ways, presences' memos and news of a
     * lost worker carry an HMAC with it, and nothing unproven is linked to or failed over at once. None: links
     * listen on loopback only, and only a ping decides a worker's death.
     */
    secret?: string,
  ) {
    this.presenceQueue = `${workerQueue}-presence`;
    if (secret !== undefined && secret.length < MIN_SECRET_LENGTH)
      throw new RangeError(`fastFailover.secret must be at least ${MIN_SECRET_LENGTH} characters`);
    this.secret = secret;
    if (links !== false)
      this.links = new PeerLinks(workerQueue, (peer, evidence) => this.peerLost(peer, evidence), links, secret);
  }

  /** Counts an activity attempt in (on start) and out (when it settles). */
  readonly activityInterceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: new TrackCalls(this, ctx.info),
  });

  /** A workflow task of this run ran here (the loop's `extensions.runSeen` sink, also on replay). */
  runSeen(workflowId: string, runId: string): void {
    this.runs.delete(runId);
    this.runs.set(runId, { workflowId, runId, seenAt: Date.now() });
    // Bounded also while no presence reports (its queue's worker stopped): the oldest sighting goes first.
    if (this.runs.size > MAX_REPORTED_RUNS) this.runs.delete(this.runs.keys().next().value!);
  }

  /** @internal */
  callStarted(call: HeldCall): void {
    this.calls.set(key(call), call);
    this.wake?.();
  }

  /** @internal */
  callEnded(call: HeldCall): void {
    this.calls.delete(key(call));
  }

  /** Resolves after `ms`, or as soon as a call starts. */
  changed(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
      this.wake = done;
    });
  }

  /** @internal The presence activity runs (true) or ended (false). */
  beatingNow(on: boolean): void {
    this.beating += on ? 1 : -1;
    this.lastBeatAt = Date.now();
  }

  /**
   * @internal This worker's presence activity was given up while it lives (its heartbeats came late, or its
   * workflow is gone): a new presence starts at once, not after the watchdog's `UNWATCHED_MS`. Overloaded workers
   * come back late often (eight times in one bench at 500 runs), and a worker killed while unwatched is not failed
   * over at all (its runs then wait out their calls' heartbeat timeouts).
   */
  givenUp(now = Date.now()): void {
    if (!this.watching || this.stopping() || this.restartTimer) return;
    // At most one start per `RESTART_GAP_MS`: a worker late on every heartbeat would otherwise start a presence
    // workflow (and its peers a listing, a link) every second or two, loading the server it is already late to.
    const wait = this.startedAt + RESTART_GAP_MS - now;
    if (wait <= 0) return void this.restart?.();
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      if (this.watching && !this.stopping() && this.beating === 0) this.restart?.();
    }, wait);
    this.restartTimer.unref();
  }

  /** Set by the worker: how it polls another worker's own queue for a while (`adopt`). */
  onAdopt(adopter: (queue: string) => Promise<void>): void {
    this.adopter = adopter;
  }

  /**
   * Polls a dead worker's own queue for a while: runs whose context it held still send their next model call
   * there (the workflow cannot know it died), and it would wait out its schedule-to-start timeout. Taken here, the
   * call misses the cache once and names this worker's queue for the run's next one. Once per queue, at most
   * `MAX_ADOPTED` queues, never while this worker shuts down.
   */
  async adopt(queue: string): Promise<boolean> {
    if (!this.adopter || this.stopping() || queue === this.workerQueue) return false;
    if (this.adopted.has(queue)) return true; // already polled here (a link's news failed it over first)
    if (this.adopted.size >= MAX_ADOPTED) return false;
    this.adopted.add(queue);
    try {
      await this.adopter(queue);
      return true;
    } catch (err) {
      this.adopted.delete(queue);
      throw err;
    }
  }

  /** @internal An adopted queue is no longer polled. */
  released(queue: string): void {
    this.adopted.delete(queue);
  }

  /**
   * Starts this worker's presence workflow on the fleet queue of the shared queue `taskQueue`, and a watchdog that starts another
   * whenever none has run here for `UNWATCHED_MS` (its workflow gave up on a live worker, or lost a renewal).
   */
  watch(client: Client, taskQueue: string): void {
    this.client = client;
    this.watching = true;
    const fleet = fleetTaskQueue(taskQueue);
    const start = () => {
      this.startedAt = Date.now();
      this.lastBeatAt = this.startedAt; // a start's grace: its activity has `UNWATCHED_MS` to begin
      const address = this.links?.address;
      const input: PresenceInput = {
        workerQueue: this.workerQueue,
        presenceQueue: this.presenceQueue,
        timeoutMs: this.timeoutMs,
        renewAfterMs: RENEW_AFTER_MS,
        ...(address ? { linked: true } : {}),
      };
      const workflowId = `jai-presence-${this.workerQueue}-${++this.attempt}`;
      // What the fleet's other workers link to this one by (and what an operator sees of it); proven with a secret.
      const memo: PresenceMemo = {
        workerQueue: this.workerQueue,
        ...(address ? { links: address } : {}),
        ...(this.identities.length > 0 ? { identities: this.identities } : {}),
      };
      client.workflow
        .start(WORKER_PRESENCE_WORKFLOW, {
          taskQueue: fleet,
          workflowId,
          args: [input],
          memo: this.secret ? { ...memo, mac: presenceMemoMac(this.secret, workflowId, memo) } : { ...memo },
        })
        .catch((err) => console.warn(`jai: could not start the presence of ${this.workerQueue}: ${String(err)}`));
    };
    // Listening first, so the presence names the address; a worker that cannot listen is watched without links.
    const listening = this.links
      ? this.links.listen().catch((err) => console.warn(`jai: ${this.workerQueue} links no peers: ${String(err)}`))
      : Promise.resolve();
    void listening.then(() => {
      if (!this.watching) return; // stopped while it started to listen
      this.restart = start;
      start();
      if (this.links?.address) {
        const discover = this.discoverer(client, fleet);
        this.discovery = setInterval(() => void discover(), LINK_DISCOVERY_MS);
        this.discovery.unref();
        void discover();
      }
    });
    this.watchdog = setInterval(() => {
      if (this.beating === 0 && !this.stopping() && Date.now() - this.lastBeatAt > UNWATCHED_MS) start();
    }, WATCHDOG_MS);
    this.watchdog.unref();
  }

  /** Stops the watchdog and the fleet's listing (the worker is stopping). Its links stay until `leave()`. */
  unwatch(): void {
    this.watching = false;
    this.restart = undefined;
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    clearInterval(this.watchdog);
    clearInterval(this.discovery);
  }

  /**
   * Closes the links, saying bye: only once the worker has stopped, its presence ended (a peer that saw a link
   * close while the worker still drained would take it for dead and fail its calls).
   */
  async leave(): Promise<void> {
    await this.links?.close();
  }

  /** Lists the fleet's running presences and links to their workers (one listing at a time). */
  private discoverer(client: Client, fleet: string): () => Promise<void> {
    let busy = false;
    const query = `WorkflowType = '${WORKER_PRESENCE_WORKFLOW}' AND ExecutionStatus = 'Running' AND TaskQueue = '${fleet}'`;
    return async () => {
      if (busy || !this.links) return;
      busy = true;
      try {
        // A worker whose presence was just restarted has two running for a moment: the newest is the one told.
        const peers = new Map<string, LinkPeer & { startedAt: number }>();
        for await (const run of client.workflow.list({ query })) {
          // Anyone who can start a workflow writes memos: only a well-formed one (proven, with a secret) is linked.
          const memo = trustedMemo(run.memo, run.workflowId, this.secret);
          if (!memo?.links || memo.workerQueue === this.workerQueue) continue;
          const startedAt = run.startTime.getTime();
          if ((peers.get(memo.workerQueue)?.startedAt ?? -1) >= startedAt) continue;
          peers.set(memo.workerQueue, {
            workerQueue: memo.workerQueue,
            address: memo.links,
            presenceWorkflowId: run.workflowId,
            ...(memo.identities ? { identities: memo.identities } : {}),
            startedAt,
          });
        }
        this.listed([...peers.values()].map(({ startedAt: _, ...peer }) => peer));
        this.links.update(this.fleetPeers);
      } catch (err) {
        console.warn(`jai: ${this.workerQueue} could not list the fleet's presences: ${String(err)}`);
      } finally {
        busy = false;
      }
    };
  }

  /**
   * @internal A link to `peer` closed and the check says it is gone (or may be): its presence workflow is told,
   * and when it is gone for sure, this worker's own calls its pollers had taken are failed.
   */
  peerLost(peer: LinkPeer, evidence: LinkEvidence): void {
    if (!this.client) return;
    void tellWorkerLost(this.client, peer, { evidence, by: this.workerQueue }, this.secret);
    if (evidence === "closed") return;
    const namespace = this.client.options.namespace;
    // Gone for sure. The first survivor (by queue name) fails it over from here at once, with the report read from
    // the server, instead of waiting for its presence workflow's task and local activity (0.6-2 s at saturation):
    // its runs' replays start that much sooner. The presence workflow still fails it over after; nothing is
    // done twice (each call is failed only while the attempt reported still runs).
    if (this.firstSurvivor(peer.workerQueue)) {
      void failOver(
        this.client,
        namespace,
        this,
        { workflowId: peer.presenceWorkflowId },
        { workerQueue: peer.workerQueue, ...(peer.identities ? { identities: peer.identities } : {}) },
      ).catch((err: unknown) => failingOver(peer.workerQueue)("at once, from a link's news", err));
      return;
    }
    // The others fail their own runs' calls handed to its last polls (the fail-over reads the dead worker's runs
    // and those of the survivor that runs it, not every survivor's).
    const identities = this.deadIdentities(peer.identities, peer.workerQueue);
    if (identities.length > 0)
      void failHandedCalls(this.client, namespace, this.recentRuns(HANDED_WINDOW_MS), {
        identities,
        workerQueue: peer.workerQueue,
        before: Date.now(),
      }).catch((err: unknown) => console.warn(`jai: failing ${peer.workerQueue}'s handed calls: ${String(err)}`));
  }

  /**
   * Whether this worker comes first of the fleet's others than `dead`, by queue name, at the last listing: the one
   * that fails `dead` over when a link tells. Listings may differ for a moment: then two do it, or none, and the
   * presence workflow's fail-over comes a moment later.
   */
  firstSurvivor(dead: string): boolean {
    return (
      dead !== this.workerQueue &&
      this.fleetPeers.every((p) => p.workerQueue === dead || p.workerQueue > this.workerQueue)
    );
  }

  /** @internal The fleet's workers as a listing saw them (the discoverer, tests): this one's own presence left out. */
  listed(peers: LinkPeer[]): void {
    this.fleetPeers = peers.filter((p) => p.workerQueue !== this.workerQueue);
  }

  /** What the next heartbeat says. */
  report(now = Date.now()): PresenceReport {
    // Oldest first (insertion order, refreshed on each sighting): drop the forgotten, keep the newest.
    for (const [runId, run] of this.runs) {
      if (now - run.seenAt <= RUN_FORGOTTEN_MS && this.runs.size <= MAX_REPORTED_RUNS) break;
      this.runs.delete(runId);
    }
    return {
      calls: [...this.calls.values()],
      runs: [...this.runs.values()].map(({ workflowId, runId }) => ({ workflowId, runId })),
      ...(this.links ? { links: this.links.linked(), linkedBy: this.links.linkedBy() } : {}),
      ...(this.identities.length > 0 ? { identities: this.identities } : {}),
    };
  }

  /**
   * The identities of a dead worker that name it alone: not this worker's, nor a live peer's (workers given one
   * identity for the whole fleet would otherwise have each other's calls failed).
   */
  deadIdentities(identities: string[] | undefined, deadQueue: string): string[] {
    const live = new Set([
      ...this.identities,
      ...this.fleetPeers.filter((p) => p.workerQueue !== deadQueue).flatMap((p) => p.identities ?? []),
    ]);
    return (identities ?? []).filter((id) => !live.has(id));
  }

  /** The runs this worker ran a workflow task of in the last `ms`. */
  recentRuns(ms: number, now = Date.now()): HeldRun[] {
    return [...this.runs.values()]
      .filter((run) => now - run.seenAt <= ms)
      .map(({ workflowId, runId }) => ({ workflowId, runId }));
  }
}

class TrackCalls implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly presence: WorkerPresence,
    private readonly info: Info,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, "execute">) {
    const execution = this.info.workflowExecution;
    // Local activities cannot be failed by id.
    if (this.info.isLocal || !execution) return next(input);
    const call: HeldCall = {
      workflowId: execution.workflowId,
      runId: execution.runId,
      activityId: this.info.activityId,
      attempt: this.info.attempt,
    };
    this.presence.callStarted(call);
    try {
      return await next(input);
    } finally {
      this.presence.callEnded(call);
    }
  }
}

/** Activity state STARTED in a pending activity (`describe`): the only state a call is failed in. */
const STARTED = 2;

type Described = Awaited<ReturnType<Client["workflowService"]["describeWorkflowExecution"]>>;
type Warn = (what: string, err: unknown) => void;

/** What a fail-over of `workerQueue` could not do, logged; its runs' own timeouts still do it. */
const failingOver =
  (workerQueue: string): Warn =>
  (what, err) =>
    console.warn(`jai: failing over ${workerQueue}: ${what}: ${String(err)}`);

const describe = (c: Client, namespace: string | undefined, run: HeldRun, warn: Warn) =>
  c.workflowService.describeWorkflowExecution({ namespace, execution: run }).catch((err: unknown) => {
    warn(`reading ${run.workflowId}`, err);
    return undefined;
  });

/**
 * The attempts the server says one of `identities` (a dead worker's pollers) started before `before` (when its
 * death was learned) and that still run: handed to its last polls as it died, they are in no report.
 */
function handedAttempts(described: Described, identities: Set<string>, before: number) {
  return (described.pendingActivities ?? [])
    .filter(
      (a) =>
        Number(a.state ?? 0) === STARTED &&
        identities.has(a.lastWorkerIdentity ?? "") &&
        // A process that took the dead one's identity since (a restarted container: same pid, same host) is not it.
        timestampMs(a.lastStartedTime) <= before,
    )
    .map((a) => ({ activityId: a.activityId ?? "", attempt: a.attempt ?? 0 }));
}

/**
 * Fails one call of a dead worker with a heartbeat timeout; false when it was done meanwhile or its run ended. By
 * id, not by the attempt's task token (which would leave a retry alone by itself): the server takes only an
 * application failure by token ("Failure must have ApplicationFailureInfo"), and the run must see the heartbeat
 * timeout it would have seen. A retry starts only after its backoff (1-2 s), so the attempt read just before
 * stands for the one failed.
 */
async function failCall(
  c: Client,
  call: { workflowId: string; runId: string; activityId: string },
  workerQueue: string,
  warn: Warn,
): Promise<boolean> {
  try {
    await c.activity.fail(
      call,
      new TimeoutFailure(`worker ${workerQueue} stopped heartbeating`, undefined, TimeoutType.HEARTBEAT),
    );
    return true;
  } catch (err) {
    warn(`failing ${call.workflowId} activity ${call.activityId}`, err);
    return false;
  }
}

/**
 * Reads `runs` and fails the calls a dead worker's pollers (`identities`) had taken and no report named. Returns
 * how many it failed; never throws for one run or call.
 */
export async function failHandedCalls(
  c: Client,
  namespace: string | undefined,
  runs: HeldRun[],
  dead: { identities: string[]; workerQueue: string; before: number },
): Promise<number> {
  const identities = new Set(dead.identities);
  const warn = failingOver(dead.workerQueue);
  let failed = 0;
  await eachLimited(runs, async (run) => {
    const described = await describe(c, namespace, run, warn);
    if (!described) return;
    for (const { activityId } of handedAttempts(described, identities, dead.before))
      if (await failCall(c, { ...run, activityId }, dead.workerQueue, warn)) failed++;
  });
  return failed;
}

/**
 * The presence activities: `workerPresence` and `workerPing` (on the watched worker's presence queue) and
 * `failOverWorker` (a local activity on a survivor).
 */
export function createPresenceActivities(client: () => Client | undefined, presence: WorkerPresence | undefined) {
  return {
    /** Heartbeats the worker's report until renewal or shutdown. */
    async workerPresence(input: { renewAfterMs: number }): Promise<PresenceEnd> {
      const ctx = Context.current();
      if (!presence || ctx.info.taskQueue !== presence.presenceQueue)
        throw new Error(`workerPresence ran on ${ctx.info.taskQueue}, not the queue it watches`);
      presence.beatingNow(true);
      try {
        const execution = ctx.info.workflowExecution!;
        // The workflow's next task (after this activity ends) must not wait for this worker's sticky queue: this
        // worker may be dead by then.
        await client()?.workflowService.resetStickyTaskQueue({
          namespace: ctx.info.workflowNamespace,
          execution: { workflowId: execution.workflowId, runId: execution.runId },
        });
        const renewAt = Date.now() + input.renewAfterMs;
        const signal = ctx.cancellationSignal;
        while (Date.now() < renewAt && !signal.aborted) {
          if (presence.stopping()) return "stopped";
          ctx.heartbeat(presence.report());
          await presence.changed(Math.min(BEAT_MS, presence.timeoutMs / 2), signal);
        }
        if (!signal.aborted) return "renew";
        if (ctx.cancellationDetails?.workerShutdown) return "stopped";
        // Timed out while alive, or its workflow is gone: another presence starts now.
        presence.givenUp();
        throw new CancelledFailure(`presence of ${presence.workerQueue} given up`);
      } finally {
        presence.beatingNow(false);
      }
    },

    /** Answers a presence workflow that lost this worker's heartbeats: the queue it watches, when it is this one's. */
    async workerPing(): Promise<string> {
      return presence && Context.current().info.taskQueue === presence.presenceQueue ? presence.workerQueue : "";
    },

    /**
     * The fail-over of a dead worker (`failOver`), for its presence workflow, on a survivor. With a secret, only of
     * a presence whose memo proves it (a hand-started one could name any worker's queue and report any calls).
     */
    async failOverWorker(input: { workerQueue: string; report?: PresenceReport }): Promise<FailoverResult> {
      const c = client();
      if (!c) throw new Error("failOverWorker needs the worker's client");
      const info = Context.current().info;
      const execution = info.workflowExecution!;
      if (presence?.secret !== undefined) {
        const described = await c.workflow.getHandle(execution.workflowId, execution.runId).describe();
        const memo = trustedMemo(described.memo, execution.workflowId, presence.secret);
        if (memo?.workerQueue !== input.workerQueue)
          throw ApplicationFailure.nonRetryable(
            `presence ${execution.workflowId} does not prove the fleet's secret: ${input.workerQueue} is not failed over`,
            "UnprovenPresence",
          );
      }
      return failOver(c, info.workflowNamespace, presence, execution, input);
    },

    /**
     * Whether news of a lost worker, signalled to the presence workflow this runs for, proves the fleet's secret
     * (any client of the namespace can signal): only proven news is taken for sure. Never without a secret.
     */
    async checkWorkerLost(news: WorkerLost): Promise<boolean> {
      const secret = presence?.secret;
      if (secret === undefined || typeof news?.evidence !== "string" || typeof news.by !== "string") return false;
      const { workflowId } = Context.current().info.workflowExecution!;
      return macMatches(workerLostMac(secret, workflowId, news), news.mac);
    },
  };
}

/**
 * Fails over the dead worker `input.workerQueue`, whose presence workflow is `presenceExecution`: clears its runs'
 * sticky queues and fails its calls with a heartbeat timeout, each call only while the attempt it reported is still
 * the run's running one (a retry elsewhere is left alone), and the calls its pollers were handed that no report
 * names. Run by its presence workflow (a local activity on a survivor), and at once by the first survivor a link
 * told (`WorkerPresence.peerLost`): doing it twice is harmless, each step checks what the server holds first.
 * Never throws for one run or call: what it could not do, their own timeouts still do.
 */
export async function failOver(
  c: Client,
  namespace: string | undefined,
  presence: WorkerPresence | undefined,
  presenceExecution: { workflowId: string; runId?: string },
  input: { workerQueue: string; report?: PresenceReport; identities?: string[] },
): Promise<FailoverResult> {
  const warn = failingOver(input.workerQueue);
  // Read from the server when a link told first; a report that cannot be read leaves the calls to their own
  // timeouts (the runs are still freed as they show up), never the fail-over undone.
  const report: PresenceReport =
    input.report ??
    (await lastReport(c, namespace, presenceExecution).catch((err: unknown) => {
      warn("reading its last report", err);
      return { calls: [], runs: [] };
    }));
  const reportMissing = !input.report && report.calls.length === 0 && report.runs.length === 0;
  // At once, while the calls fail: a run's next call may be on its way to the dead worker's queue.
  const adopting = (presence?.adopt(input.workerQueue) ?? Promise.resolve(false)).catch((err) => {
    warn("polling its queue", err);
    return false;
  });
  const unstick = async (run: HeldRun) => {
    try {
      await c.workflowService.resetStickyTaskQueue({ namespace, execution: run });
      return true;
    } catch {
      return false; // ended, or not found: nothing waits on it
    }
  };
  const learnedAt = Date.now();
  // The report's, and those its presence's memo names (what a link told knows when no report could be read).
  const given = [...new Set([...(report.identities ?? []), ...(input.identities ?? [])])];
  const identities = new Set(presence ? presence.deadIdentities(given, input.workerQueue) : given);
  let callsFailed = 0;
  let runsUnstuck = 0;
  const byRun = new Map<string, HeldCall[]>();
  for (const call of report.calls) byRun.set(call.runId, [...(byRun.get(call.runId) ?? []), call]);
  // One pool, the runs with calls first: each is cleared (while it is read) before its calls fail, so the task
  // a failure makes goes to any worker at once.
  const serve = async (run: HeldRun, calls: HeldCall[]) => {
    const [described, unstuck] = await Promise.all([describe(c, namespace, run, warn), unstick(run)]);
    if (unstuck) runsUnstuck++;
    if (!described) return;
    const pending = new Map(
      (described.pendingActivities ?? []).map((a) => [
        a.activityId ?? "",
        { attempt: a.attempt ?? 0, state: Number(a.state ?? 0) },
      ]),
    );
    const reported = calls.filter((call) => {
      const now = pending.get(call.activityId);
      return now?.state === STARTED && now.attempt === call.attempt;
    });
    const named = new Set(calls.map((call) => call.activityId));
    const handed = handedAttempts(described, identities, learnedAt).filter((a) => !named.has(a.activityId));
    for (const activityId of [...reported.map((call) => call.activityId), ...handed.map((a) => a.activityId)])
      if (await failCall(c, { ...run, activityId }, input.workerQueue, warn)) callsFailed++;
  };
  await eachLimited<() => Promise<void>>(
    [
      ...[...byRun.values()].map((calls) => () => serve(calls[0], calls)),
      ...report.runs.filter((r) => !byRun.has(r.runId)).map((run) => () => serve(run, [])),
    ],
    (work) => work(),
  );
  // This survivor's own recent runs too (their calls may have gone to the dead worker's last polls).
  const theirs = new Set([...report.runs.map((r) => r.runId), ...byRun.keys()]);
  if (presence && identities.size > 0)
    callsFailed += await failHandedCalls(
      c,
      namespace,
      presence.recentRuns(HANDED_WINDOW_MS).filter((r) => !theirs.has(r.runId)),
      { identities: [...identities], workerQueue: input.workerQueue, before: learnedAt },
    );
  return { callsFailed, runsUnstuck, queueAdopted: await adopting, ...(reportMissing ? { reportMissing } : {}) };
}

/**
 * Tells `peer`'s presence workflow that a link to it closed. Every linked peer tells at once; the server keeps one
 * news of each kind (a signal's request id): a second signal arriving while the fail-over's task ran made the
 * server refuse that task, and the fail-over ran twice. Never throws: a presence that ended meanwhile (failed over
 * by its heartbeats, or its worker left) has nothing to be told.
 */
export async function tellWorkerLost(client: Client, peer: LinkPeer, news: WorkerLost, secret?: string): Promise<void> {
  const { payloadConverter, payloadCodecs } = client.options.loadedDataConverter;
  if (secret) news = { ...news, mac: workerLostMac(secret, peer.presenceWorkflowId, news) };
  try {
    await client.workflowService.signalWorkflowExecution({
      namespace: client.options.namespace,
      workflowExecution: { workflowId: peer.presenceWorkflowId },
      signalName: workerLostSignal.name,
      input: { payloads: await encodePayloads([payloadConverter.toPayload(news)], payloadCodecs) },
      identity: client.options.identity,
      requestId: `jai-link-${peer.workerQueue}-${news.evidence}`,
    });
  } catch {
    // ended meanwhile
  }
}

/**
 * The last report a presence activity heartbeated, read from its workflow (a link found the worker dead before
 * its heartbeats timed out, so no timeout handed them to the workflow): the running activity's heartbeat details,
 * or, once it timed out meanwhile (at saturation the fail-over's task can take longer than the presence timeout),
 * the details its timeout carries in the history. Empty when it sent none.
 */
async function lastReport(
  client: Client,
  namespace: string | undefined,
  presence: { workflowId: string; runId?: string },
): Promise<PresenceReport> {
  const described = await client.workflowService.describeWorkflowExecution({ namespace, execution: presence });
  const payloads =
    described.pendingActivities?.find((a) => a.activityType?.name === "workerPresence")?.heartbeatDetails?.payloads ??
    (await timedOutReport(client, namespace, presence));
  if (!payloads?.length) return { calls: [], runs: [] };
  const { payloadConverter, payloadCodecs } = client.options.loadedDataConverter;
  const [first] = await decodePayloads(payloads as Payload[], payloadCodecs);
  return payloadConverter.fromPayload<PresenceReport>(first);
}

/** The last heartbeat details of the presence activity's latest timeout in the workflow's (short) history. */
async function timedOutReport(
  client: Client,
  namespace: string | undefined,
  execution: { workflowId: string; runId?: string },
) {
  const presenceScheduled = new Set<string>();
  let details: { payloads?: unknown[] | null } | null | undefined;
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({ namespace, execution, nextPageToken });
    for (const e of page.history?.events ?? []) {
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === "workerPresence")
        presenceScheduled.add(String(e.eventId));
      const timedOut = e.activityTaskTimedOutEventAttributes;
      if (timedOut && presenceScheduled.has(String(timedOut.scheduledEventId)))
        details = timedOut.failure?.timeoutFailureInfo?.lastHeartbeatDetails;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return details?.payloads;
}

async function eachLimited<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(FAILOVER_CONCURRENCY, items.length) }, lane));
}

/**
 * The presence timeout in ms, from the worker option: at least `MIN_PRESENCE_TIMEOUT_MS` (0 would turn the
 * heartbeat timeout off, and a timeout shorter than two beats would take every live worker for late).
 */
export function presenceTimeoutMs(timeout: Duration | undefined): number {
  const ms = msToNumber(timeout ?? DEFAULT_PRESENCE_TIMEOUT);
  if (!(ms >= MIN_PRESENCE_TIMEOUT_MS))
    throw new RangeError(
      `fastFailover.presenceTimeout must be at least ${MIN_PRESENCE_TIMEOUT_MS} ms, got ${String(timeout)}`,
    );
  return ms;
}
