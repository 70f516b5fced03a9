/**
 * A worker's presence: one activity on the worker's presence queue that heartbeats what the worker has in hand.
 * When the heartbeats stop and a ping there goes unanswered (the worker died), or a peer's link to the worker
 * closed and nothing is left at its address, another worker fails its calls by id and clears its runs' sticky
 * queues, so the runs go on within about two presence timeouts (or a second or so, by a link) instead of each
 * waiting out its own heartbeat timeout, then the sticky timeout. See presence.ts (the worker side).
 */
import {
  ActivityFailure,
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  patched,
  proxyLocalActivities,
  setHandler,
  sleep,
  TimeoutFailure,
} from "@temporalio/workflow";
import type {
  FailoverResult,
  PresenceEnd,
  PresenceInput,
  PresenceOutcome,
  PresenceReport,
  WorkerLost,
} from "./types.js";

/** Presences failed over by this version end in a task of their own (see below). */
const PRESENCE_OWN_END_PATCH = "jai-presence-own-end-v1";
/** Presences of this version take news that a worker is gone for sure only once it proves the fleet's secret. */
const PRESENCE_NEWS_CHECKED_PATCH = "jai-presence-news-checked-v1";
/** At most this many news are checked per run (each a local activity); later ones are taken as unsure. */
const MAX_NEWS_CHECKS = 8;

/** With links: how long a worker has to take its ping, and then to answer it, before it is taken for dead. */
const PING_TAKEN_MS = 30_000;
const PING_ANSWERED_MS = 60_000;

/** Workflow type name of a worker's presence. */
export const WORKER_PRESENCE_WORKFLOW = "agentWorkerPresence";
/** A peer's link to the watched worker closed (src/failover/links.ts). */
export const workerLostSignal = defineSignal<[WorkerLost]>("workerLost");

interface PresenceActivities {
  workerPresence(input: { renewAfterMs: number }): Promise<PresenceEnd>;
  workerPing(): Promise<string>;
  /** `report` absent: the presence activity's last heartbeat details, read from the server. */
  failOverWorker(input: { workerQueue: string; report?: PresenceReport }): Promise<FailoverResult>;
  /** Whether news signalled to this workflow proves the fleet's secret (never without one). */
  checkWorkerLost(news: WorkerLost): Promise<boolean>;
}

export async function agentWorkerPresence(input: PresenceInput): Promise<PresenceOutcome> {
  // Before any command: presences that ran before this version replay without the check.
  const checksNews = patched(PRESENCE_NEWS_CHECKED_PATCH);
  const { workerPresence } = proxyActivities<PresenceActivities>({
    taskQueue: input.presenceQueue,
    heartbeatTimeout: input.timeoutMs,
    // A worker that never picks it up is gone already, with nothing in hand this workflow could name.
    scheduleToStartTimeout: Math.max(10_000, 5 * input.timeoutMs),
    startToCloseTimeout: input.renewAfterMs + 60_000,
    retry: { maximumAttempts: 1 },
  });
  // A worker whose heartbeats were late but that answers this in time is alive (a pause, a slow server): it is
  // not failed over, and it starts another presence. Only the worker itself answers with its queue's name (the
  // presence queue is its alone). A dead worker's polls are gone, so nothing takes the ping. With links, which
  // tell a killed worker's death at once, the ping is there for a worker that hangs or is cut off, and is patient
  // (30 s to take it, 60 s to answer): overloaded live workers, whose event loop stalls, took their ping more than
  // 1 s late or did not answer within 5 s (500 runs on 3 workers of 2 cores), and did not take it within 5 s or
  // answer within 20 s (1,000 runs), and were failed over alive: their calls failed, ~150 runs each replayed
  // elsewhere. A hung worker is failed over that much later; its calls' own heartbeat timeouts fail them meanwhile.
  // Patient only where a link could have told: a worker no peer holds a link to (none reach its address) is
  // known dead by its silence alone, and a patient ping would make its fail-over wait 30 s.
  const ping = (patient: boolean) =>
    proxyActivities<PresenceActivities>({
      taskQueue: input.presenceQueue,
      scheduleToStartTimeout: patient ? Math.max(PING_TAKEN_MS, input.timeoutMs) : input.timeoutMs,
      startToCloseTimeout: Math.max(patient ? PING_ANSWERED_MS : 5000, input.timeoutMs),
      retry: { maximumAttempts: 1 },
    }).workerPing;
  const answers = (patient: boolean) =>
    ping(patient)().then(
      (queue) => queue === input.workerQueue,
      () => false,
    );
  // Runs on whichever worker takes this task: a survivor, at once (the presence activity cleared this run's
  // sticky queue when it started, so the task does not wait for the dead worker's).
  const { failOverWorker } = proxyLocalActivities<PresenceActivities>({
    startToCloseTimeout: "1 minute",
    // Once: a second pass could fail attempts that already moved on (it checks each, but the report is old).
    retry: { maximumAttempts: 1 },
  });
  const { checkWorkerLost } = proxyLocalActivities<PresenceActivities>({
    startToCloseTimeout: "10 seconds",
    retry: { maximumAttempts: 1 },
  });
  let lost: WorkerLost | undefined;
  let checks = 0;
  let checking = false;
  setHandler(workerLostSignal, async (news) => {
    // Any client of the namespace can signal: news that the worker is gone for sure is taken so only when it
    // proves the fleet's secret (a local activity checks). Any other is unsure news: the worker is pinged, and a
    // live one answers. One check at a time, a few per run, none while sure news is held.
    if (checksNews && news.evidence !== "closed") {
      const sure = lost !== undefined && lost.evidence !== "closed";
      let proven = false;
      if (!sure && !checking && checks < MAX_NEWS_CHECKS) {
        checking = true;
        checks++;
        try {
          proven = await checkWorkerLost(news);
        } catch {
          proven = false;
        } finally {
          checking = false;
        }
      }
      if (!proven) news = { evidence: "closed", by: String(news.by) };
    }
    // Sure news replaces unsure news (a saturated peer's check can time out where another's is refused).
    if (!lost || (lost.evidence === "closed" && news.evidence !== "closed")) lost = news;
  });
  // How the presence activity ended, once it did: its end on a live worker, or a silence.
  let ended: { end: PresenceEnd } | { silence: TimeoutFailure } | undefined;
  const presence = workerPresence({ renewAfterMs: input.renewAfterMs }).then(
    (end) => void (ended = { end }),
    (err: unknown) => {
      // Anything but a silence fails this workflow (its status says so); the worker's watchdog starts another.
      if (!(err instanceof ActivityFailure && err.cause instanceof TimeoutFailure)) throw err;
      ended = { silence: err.cause };
    },
  );
  /** The last report the worker heartbeated before its silence, once its presence activity fell silent. */
  const silenceReport = () =>
    ended && "silence" in ended ? (ended.silence.lastHeartbeatDetails as PresenceReport | undefined) : undefined;
  for (;;) {
    // The first news wins: the activity's end, or a peer's (a killed worker's sockets close at once).
    await Promise.race([presence, condition(() => lost !== undefined)]);
    const byLink = ended === undefined;
    // A link that closed (nothing said whether anyone is left at the worker's address) or a silence: the worker's
    // ping tells. Refused or replaced: nothing of it is left there, it is failed over at once. News that the
    // worker is gone for sure also cuts a ping short (at saturation its silence can come first). No ping when the
    // presence activity ended on a live worker.
    const endedLive = () => ended !== undefined && "end" in ended;
    const gone = () => lost !== undefined && lost.evidence !== "closed";
    // A silence says whether anyone held a link to the worker in its last report; a link's news says so itself.
    const patient = input.linked === true && (byLink || (silenceReport()?.linkedBy ?? 1) > 0);
    const alive =
      endedLive() || gone() ? false : await Promise.race([answers(patient), condition(gone).then(() => false)]);
    // Its presence activity ended on a live worker (renewal, shutdown), before news or during the ping: no death.
    if (ended && "end" in ended) {
      if (ended.end === "renew") await continueAsNew<typeof agentWorkerPresence>(input);
      return { worker: "stopped" };
    }
    if (alive) {
      if (ended) return { worker: "alive" };
      lost = undefined;
      continue;
    }
    // The report: the silence's last heartbeat details (also when it came during the ping), else read from the
    // server (a link told first: no timeout carries them yet).
    const report = ended && "silence" in ended ? (silenceReport() ?? { calls: [], runs: [] }) : undefined;
    let failover = await failOverWorker({ workerQueue: input.workerQueue, ...(report ? { report } : {}) });
    // A link told, and the fail-over found no report on the server: the presence activity timed out while it ran
    // (at saturation its task can outlast the presence timeout), and the timeout carries the report. Once more
    // with it; the timeout comes within the presence timeout of the news, or never (a worker that is not dead).
    if (failover.reportMissing && (await condition(() => ended !== undefined, 2 * input.timeoutMs))) {
      const silence = silenceReport();
      if (silence) {
        const again = await failOverWorker({ workerQueue: input.workerQueue, report: silence });
        failover = {
          callsFailed: failover.callsFailed + again.callsFailed,
          runsUnstuck: failover.runsUnstuck + again.runsUnstuck,
          queueAdopted: failover.queueAdopted || again.queueAdopted,
        };
      }
    }
    // The fail-over's task does not also end the workflow: an event that came while it ran (the worker's silence
    // after a link's news, at saturation seconds later) made the server refuse a task that ended it, and the
    // fail-over ran again. A timer's task ends it instead.
    if (patched(PRESENCE_OWN_END_PATCH)) await sleep(1);
    return { worker: "lost", lostBy: byLink || gone() ? "link" : "heartbeats", failover };
  }
}
