/**
 * Workflow task slots that cap replays. A workflow task taken from the shared queue (not the worker's sticky
 * queue) is, nearly always, a run the worker does not hold: it replays the run's whole history first (~100 ms for
 * 20 turns here). When a worker dies, the survivors get all its runs at once; with 40 slots each takes 40 such
 * tasks off the queue together and works through them on one workflow thread, and the last ones outlive their
 * workflow task timeout (the clock starts when the task is polled), time out, and are replayed again elsewhere:
 * the dead worker's slowest runs waited twice (docs/lab/scaling.md). Capped, the rest wait in the server's
 * queue, where no timeout runs, and every replay a worker takes finishes in time. No cap unless one is set
 * (`maxConcurrentReplays`, the worker process's `--max-replays`).
 */
import type {
  CustomSlotSupplier,
  SlotPermit,
  SlotReleaseContext,
  SlotReserveContext,
  WorkerOptions,
  WorkerTuner,
  WorkflowSlotInfo,
} from "@temporalio/worker";

interface Permit extends SlotPermit {
  /** Reserved for a poll of the sticky queue (a run this worker holds), else of the shared queue. */
  sticky: boolean;
}

/** Temporal's workflow task slots when `maxConcurrentWorkflowTaskExecutions` is not set. */
const DEFAULT_WORKFLOW_TASK_SLOTS = 40;

/** A cap leaves a sticky poll and a shared one at least: fewer, and the worker could not take a new run at all. */
export const replayCapFits = (maxReplays: number, slots: number) =>
  Number.isInteger(maxReplays) && maxReplays >= 1 && maxReplays < slots;

/** At most `slots` workflow tasks at once, of which at most `maxReplays` from the shared queue. */
export class ReplayCappedSlots implements CustomSlotSupplier<WorkflowSlotInfo> {
  readonly type = "custom";
  private inUse = 0;
  private replays = 0;
  private readonly waiting: { sticky: boolean; grant: () => void }[] = [];

  constructor(
    /** Workflow task slots in all (Temporal's `maxConcurrentWorkflowTaskExecutions`). */
    readonly slots: number,
    /** Of which at most this many hold a task from the shared queue (a poll waiting for one counts). */
    readonly maxReplays: number,
  ) {
    if (!(Number.isInteger(slots) && slots >= 2))
      throw new RangeError(`maxConcurrentReplays needs maxConcurrentWorkflowTaskExecutions of 2 or more, got ${slots}`);
    if (!replayCapFits(maxReplays, slots))
      throw new RangeError(`maxConcurrentReplays must be an integer from 1 to ${slots - 1}, got ${maxReplays}`);
  }

  /** Slots in use, and of them held for the shared queue (tests). */
  get state(): { inUse: number; replays: number; waiting: number } {
    return { inUse: this.inUse, replays: this.replays, waiting: this.waiting.length };
  }

  reserveSlot(ctx: SlotReserveContext, signal: AbortSignal): Promise<SlotPermit> {
    const sticky = ctx.isSticky;
    // Given up before this ran (a stopping poller): a permit taken now would never come back.
    if (signal.aborted) return Promise.reject(signal.reason);
    if (this.fits(sticky)) return Promise.resolve(this.take(sticky));
    return new Promise((resolve, reject) => {
      const waiter = {
        sticky,
        grant: () => {
          signal.removeEventListener("abort", abort);
          resolve(this.take(sticky));
        },
      };
      const abort = () => {
        const i = this.waiting.indexOf(waiter);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", abort, { once: true });
      this.waiting.push(waiter);
    });
  }

  tryReserveSlot(ctx: SlotReserveContext): SlotPermit | null {
    return this.fits(ctx.isSticky) ? this.take(ctx.isSticky) : null;
  }

  markSlotUsed(): void {}

  releaseSlot(ctx: SlotReleaseContext<WorkflowSlotInfo>): void {
    const permit = ctx.permit as Partial<Permit>;
    this.inUse--;
    if (permit.sticky === false) this.replays--;
    // The first waiter that fits now, in arrival order (a shared-queue poll skipped while replays are full).
    const i = this.waiting.findIndex((w) => this.fits(w.sticky));
    if (i >= 0) this.waiting.splice(i, 1)[0].grant();
  }

  private fits(sticky: boolean): boolean {
    return this.inUse < this.slots && (sticky || this.replays < this.maxReplays);
  }

  private take(sticky: boolean): Permit {
    this.inUse++;
    if (!sticky) this.replays++;
    return { sticky };
  }
}

/**
 * `options` with its slot limits as a tuner whose workflow task slots cap replays at `maxReplays`. Temporal's
 * defaults stand for the limits not set (40 workflow tasks, 100 activities, 100 local activities, 100 Nexus tasks).
 */
export function replayCappedOptions(options: Partial<WorkerOptions>, maxReplays: number): Partial<WorkerOptions> {
  if (options.tuner)
    throw new TypeError(
      "maxConcurrentReplays cannot be combined with workerOptions.tuner: set the tuner's slots instead",
    );
  const {
    maxConcurrentWorkflowTaskExecutions,
    maxConcurrentActivityTaskExecutions,
    maxConcurrentLocalActivityExecutions,
    maxConcurrentNexusTaskExecutions,
    ...rest
  } = options;
  const fixed = (numSlots: number | undefined) => ({ type: "fixed-size" as const, numSlots: numSlots ?? 100 });
  const tuner: WorkerTuner = {
    workflowTaskSlotSupplier: new ReplayCappedSlots(
      maxConcurrentWorkflowTaskExecutions ?? DEFAULT_WORKFLOW_TASK_SLOTS,
      maxReplays,
    ),
    activityTaskSlotSupplier: fixed(maxConcurrentActivityTaskExecutions),
    localActivityTaskSlotSupplier: fixed(maxConcurrentLocalActivityExecutions),
    nexusTaskSlotSupplier: fixed(maxConcurrentNexusTaskExecutions),
  };
  return { ...rest, tuner };
}
