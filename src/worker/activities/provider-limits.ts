/**
 * Provider limits, per worker: at most `maxConcurrent` model calls to a provider at once and at most
 * `requestsPerSecond` requests to it (spaced evenly), enforced around each model call's HTTP request, so retries
 * count too. A provider that answers an error with `Retry-After` (429, 503, 529) pauses every call of this worker
 * to it for that long (at most MAX_PAUSE_MS); then one call probes, and the others wait for its answer, so a 429
 * storm costs one request per pause, not one per run. docs/provider-limits.md says why per worker and how this
 * meets Temporal's retries.
 */
import { retryAfterMs } from "./classify.js";

/** One provider's limits; either may be left out. */
export interface ProviderLimit {
  /** At most this many model calls to the provider at once (a streaming call counts until its stream ends). */
  maxConcurrent?: number;
  /**
   * At most this many requests per second, spaced evenly (one every 1000 / n ms, no burst); a fraction is allowed
   * (0.5: one every 2 s). A provider's per-minute quota is `requestsPerSecond: rpm / 60`.
   */
  requestsPerSecond?: number;
}

/**
 * Limits by provider name (`model.provider`, e.g. "anthropic"). The key `"*"` applies to every provider not named,
 * each on its own. A provider with no entry (and no `"*"`) has no limit and no shared pause.
 */
export type ProviderLimits = Record<string, ProviderLimit>;

/** A Retry-After longer than this pauses the provider this long, then one call probes (and may pause it again). */
export const MAX_PAUSE_MS = 60_000;

/** Providers under `"*"` that get a gate of their own; past this many (run input may name any provider) they share one. */
export const MAX_WILDCARD_PROVIDERS = 100;

/** A provider limits setting that cannot be used: `field` names it (e.g. `providerLimits.openai.maxConcurrent`). */
export class ProviderLimitsError extends TypeError {
  constructor(
    readonly field: string,
    problem: string,
  ) {
    super(`${field} ${problem}`);
    this.name = "ProviderLimitsError";
  }
}

const KEYS = new Set(["maxConcurrent", "requestsPerSecond"]);

/** Checks provider limits (from code, a config module or JSON); a wrong field is a ProviderLimitsError naming it. */
export function checkProviderLimits(value: unknown, field = "providerLimits"): ProviderLimits {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new ProviderLimitsError(field, `must be an object of limits by provider name, got ${describe(value)}`);
  const out: [string, ProviderLimit][] = [];
  for (const [provider, limit] of Object.entries(value)) {
    const at = `${field}.${provider}`;
    if (provider.trim() === "") throw new ProviderLimitsError(field, "has an empty provider name");
    if (typeof limit !== "object" || limit === null || Array.isArray(limit))
      throw new ProviderLimitsError(
        at,
        `must be an object { maxConcurrent?, requestsPerSecond? }, got ${describe(limit)}`,
      );
    for (const key of Object.keys(limit))
      if (!KEYS.has(key))
        throw new ProviderLimitsError(`${at}.${key}`, "is not a provider limit (maxConcurrent, requestsPerSecond)");
    const { maxConcurrent, requestsPerSecond } = limit as ProviderLimit;
    if (maxConcurrent !== undefined && !(Number.isSafeInteger(maxConcurrent) && maxConcurrent >= 1))
      throw new ProviderLimitsError(
        `${at}.maxConcurrent`,
        `must be an integer of at least 1, got ${describe(maxConcurrent)}`,
      );
    if (
      requestsPerSecond !== undefined &&
      !(typeof requestsPerSecond === "number" && Number.isFinite(requestsPerSecond) && requestsPerSecond > 0)
    )
      throw new ProviderLimitsError(
        `${at}.requestsPerSecond`,
        `must be a number above 0, got ${describe(requestsPerSecond)}`,
      );
    out.push([
      provider,
      {
        ...(maxConcurrent !== undefined ? { maxConcurrent } : {}),
        ...(requestsPerSecond !== undefined ? { requestsPerSecond } : {}),
      },
    ]);
  }
  // Own properties whatever the names (fromEntries defines them: a provider named "__proto__" stays a provider).
  return Object.fromEntries(out);
}

/** Provider limits from JSON text (`JAI_PROVIDER_LIMITS`, `--provider-limits`); `field` names where it came from. */
export function parseProviderLimits(text: string, field = "JAI_PROVIDER_LIMITS"): ProviderLimits {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ProviderLimitsError(
      field,
      `must be JSON like {"openai":{"maxConcurrent":8,"requestsPerSecond":5}}: ${(err as Error).message}`,
    );
  }
  return checkProviderLimits(value, field);
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : String(value);
}

/** One model call's hold on its provider's limit. */
export interface ProviderPermit {
  /** How long the call waited for it (ms). */
  readonly waitedMs: number;
  /** The provider answered this call with a success (headers): when it was the probe after a pause, the others go. */
  answered(): void;
  /**
   * The call ended (once; later calls do nothing). `retryAfterMs`: the provider answered an error with Retry-After:
   * every call of this worker to it waits that long (at most MAX_PAUSE_MS), then one probes.
   */
  release(retryAfterMs?: number): void;
}

/** What the limiter tells its observers (metrics, logs). */
export interface ProviderLimiterHooks {
  /** A call got its permit after waiting `ms` (0 when it did not wait). `provider`: the limit's name (or "*"). */
  waited?(provider: string, ms: number): void;
  /** Calls waiting for a provider changed by `delta`. */
  waiting?(provider: string, delta: number): void;
  /** A Retry-After paused a provider for `ms`. */
  paused?(provider: string, ms: number): void;
}

interface Waiter {
  since: number;
  resolve(permit: ProviderPermit): void;
}

/** A provider's state: calls in flight, calls waiting (FIFO), the next request's earliest time, a pause. */
class Gate {
  private inFlight = 0;
  private readonly queue: Waiter[] = [];
  private nextAt = 0;
  private pausedUntil = 0;
  /** A pause ended: the next call to go is a probe. */
  private probeNext = false;
  /** A probe is out: nobody else goes until it answers or ends. */
  private probing = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;

  constructor(
    readonly name: string,
    private readonly limit: ProviderLimit,
    private readonly now: () => number,
    private readonly hooks: ProviderLimiterHooks,
  ) {}

  get state() {
    return {
      inFlight: this.inFlight,
      waiting: this.queue.length,
      pausedUntil: this.pausedUntil,
      probing: this.probing,
    };
  }

  acquire(signal?: AbortSignal): Promise<ProviderPermit> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    const since = this.now();
    if (this.queue.length === 0 && this.admissibleAt(since) <= since) return Promise.resolve(this.admit(since, since));
    return new Promise<ProviderPermit>((resolve, reject) => {
      const waiter: Waiter = {
        since,
        resolve: (permit) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(permit);
        },
      };
      const onAbort = () => {
        const i = this.queue.indexOf(waiter);
        if (i < 0) return;
        this.queue.splice(i, 1);
        this.hooks.waiting?.(this.name, -1);
        reject(signal!.reason);
        this.pump();
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.queue.push(waiter);
      this.hooks.waiting?.(this.name, 1);
      this.pump();
    });
  }

  /** When the next call may go (Infinity: when a call ends or a probe answers). */
  private admissibleAt(now: number): number {
    if (this.probing) return Infinity;
    if (this.limit.maxConcurrent !== undefined && this.inFlight >= this.limit.maxConcurrent) return Infinity;
    return Math.max(now, this.pausedUntil, this.nextAt);
  }

  private admit(since: number, now: number): ProviderPermit {
    this.inFlight++;
    if (this.limit.requestsPerSecond !== undefined) this.nextAt = now + 1000 / this.limit.requestsPerSecond;
    const probe = this.probeNext;
    if (probe) {
      this.probeNext = false;
      this.probing = true;
    }
    const waitedMs = now - since;
    this.hooks.waited?.(this.name, waitedMs);
    let released = false;
    return {
      waitedMs,
      answered: () => {
        if (probe && this.probing && !released) {
          this.probing = false;
          this.pump();
        }
      },
      release: (retryAfterMs) => {
        if (released) return;
        released = true;
        this.inFlight--;
        if (probe) this.probing = false;
        if (retryAfterMs !== undefined && retryAfterMs > 0) this.pause(Math.min(retryAfterMs, MAX_PAUSE_MS));
        this.pump();
      },
    };
  }

  private pause(ms: number): void {
    const until = this.now() + ms;
    if (until > this.pausedUntil) this.pausedUntil = until;
    this.probeNext = true;
    this.hooks.paused?.(this.name, ms);
  }

  /** Lets the waiting calls go, in order, while the limit allows; else sets a timer for when it will. */
  private pump(): void {
    while (this.queue.length > 0) {
      const now = this.now();
      const at = this.admissibleAt(now);
      if (at > now) {
        if (at !== Infinity) this.wakeAt(at, now);
        return;
      }
      const waiter = this.queue.shift()!;
      this.hooks.waiting?.(this.name, -1);
      waiter.resolve(this.admit(waiter.since, now));
    }
  }

  private wakeAt(at: number, now: number): void {
    if (this.timer !== undefined && this.timerAt <= at) return;
    clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.pump();
      },
      Math.max(1, at - now),
    );
    // The waiting activities keep the worker alive, not this timer (a pause must not hold up a process's exit).
    this.timer.unref?.();
  }
}

const FREE: ProviderPermit = { waitedMs: 0, answered() {}, release() {} };

/** The provider limits of one worker: every model call of the worker to a provider goes through its gate. */
export class ProviderLimiter {
  private readonly limits: ProviderLimits;
  private readonly gates = new Map<string, Gate>();
  /** Gates made for providers under "*". */
  private wildcards = 0;
  private readonly now: () => number;

  constructor(
    limits: ProviderLimits,
    private readonly hooks: ProviderLimiterHooks = {},
    now: () => number = Date.now,
  ) {
    this.limits = checkProviderLimits(limits);
    this.now = now;
  }

  /** Whether any provider is limited. */
  get empty(): boolean {
    return Object.keys(this.limits).length === 0;
  }

  /**
   * Waits until a call to `provider` may go, FIFO among the waiting ones; then the call holds a permit until it
   * releases it. A provider without limits gets one at once. Rejects with `signal.reason` when aborted first.
   */
  acquire(provider: string, signal?: AbortSignal): Promise<ProviderPermit> {
    const gate = this.gate(provider);
    return gate ? gate.acquire(signal) : Promise.resolve(FREE);
  }

  /** A provider's calls in flight and waiting, the end of its pause (epoch ms) and whether a probe is out. */
  state(provider: string) {
    return this.gate(provider)?.state;
  }

  private gate(provider: string): Gate | undefined {
    const named = Object.hasOwn(this.limits, provider) ? provider : undefined;
    if (!named && !Object.hasOwn(this.limits, "*")) return undefined;
    // Run input may name any provider: past MAX_WILDCARD_PROVIDERS the others share the "*" gate.
    const key = named ?? (this.gates.has(provider) || this.wildcards < MAX_WILDCARD_PROVIDERS ? provider : "*");
    let gate = this.gates.get(key);
    if (!gate) {
      gate = new Gate(key, this.limits[named ?? "*"], this.now, this.hooks);
      this.gates.set(key, gate);
      if (!named) this.wildcards++;
    }
    return gate;
  }
}

/**
 * How long a finished call's answer asks the provider's callers to wait: the Retry-After (or retry-after-ms) of a
 * 429 or 5xx response; none for a success, another error, or a failure without the header.
 */
export function pauseAsked(record: { status?: number; headers?: Record<string, string> }): number | undefined {
  const status = record.status;
  if (status === undefined || (status !== 429 && status < 500)) return undefined;
  return retryAfterMs(record.headers);
}
