/**
 * The provider limiter on its own (fake timers, no server): the concurrency cap, the evenly spaced rate, the
 * shared Retry-After pause and its probe, cancellation while waiting, `"*"`, and bad limits refused with a
 * typed error naming the field, from code, JSON, the worker process's flag and createAgentWorker.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it, jest } from "@jest/globals";
import {
  checkProviderLimits,
  MAX_PAUSE_MS,
  MAX_WILDCARD_PROVIDERS,
  parseProviderLimits,
  pauseAsked,
  ProviderLimiter,
  ProviderLimitsError,
  type ProviderPermit,
} from "../../src/worker/activities/provider-limits.js";
import { runWorkerProcess } from "../../src/worker/process/run.js";
import { createAgentWorker } from "../../src/worker/worker.js";

beforeEach(() => {
  jest.useFakeTimers({ now: 1_000_000 });
});
afterEach(() => {
  jest.useRealTimers();
});

/** Acquires a permit and notes when (fake time) it was granted. */
function track(limiter: ProviderLimiter, provider: string, log: string[], name: string, signal?: AbortSignal) {
  const got: { permit?: ProviderPermit; at?: number; error?: unknown } = {};
  const promise = limiter.acquire(provider, signal).then(
    (permit) => {
      got.permit = permit;
      got.at = Date.now();
      log.push(name);
      return permit;
    },
    (error) => {
      got.error = error;
    },
  );
  return Object.assign(got, { promise });
}

const settle = () => jest.advanceTimersByTimeAsync(0);

describe("ProviderLimiter", () => {
  it("lets maxConcurrent calls in at once and the rest in order as calls end", async () => {
    const limiter = new ProviderLimiter({ openai: { maxConcurrent: 3 } });
    const log: string[] = [];
    const calls = ["a", "b", "c", "d", "e"].map((n) => track(limiter, "openai", log, n));
    await settle();
    expect(log).toEqual(["a", "b", "c"]);
    expect(limiter.state("openai")).toMatchObject({ inFlight: 3, waiting: 2 });
    calls[1].permit!.release();
    calls[1].permit!.release(); // a second release does nothing
    await settle();
    expect(log).toEqual(["a", "b", "c", "d"]);
    expect(limiter.state("openai")).toMatchObject({ inFlight: 3, waiting: 1 });
    calls[0].permit!.release();
    await settle();
    expect(log).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("spaces requests evenly at requestsPerSecond", async () => {
    const limiter = new ProviderLimiter({ openai: { requestsPerSecond: 4 } });
    const log: string[] = [];
    const start = Date.now();
    const calls = Array.from({ length: 9 }, (_, i) => track(limiter, "openai", log, String(i)));
    await jest.advanceTimersByTimeAsync(2000);
    expect(calls.map((c) => c.at! - start)).toEqual([0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000]);
    expect(calls.map((c) => c.permit!.waitedMs)).toEqual([0, 250, 500, 750, 1000, 1250, 1500, 1750, 2000]);
    // Releasing frees no extra rate: the spacing holds.
    for (const c of calls) c.permit!.release();
    const next = track(limiter, "openai", log, "next");
    await settle();
    expect(next.at).toBeUndefined();
    await jest.advanceTimersByTimeAsync(250);
    expect(next.at! - start).toBe(2250);
  });

  it("a fractional rate waits seconds between requests", async () => {
    const limiter = new ProviderLimiter({ slow: { requestsPerSecond: 0.5 } });
    const log: string[] = [];
    track(limiter, "slow", log, "a");
    track(limiter, "slow", log, "b");
    await jest.advanceTimersByTimeAsync(1999);
    expect(log).toEqual(["a"]);
    await jest.advanceTimersByTimeAsync(1);
    expect(log).toEqual(["a", "b"]);
  });

  it("a Retry-After pauses every call of the provider, then one probes and the others wait for its answer", async () => {
    const paused: [string, number][] = [];
    const limiter = new ProviderLimiter({ openai: { maxConcurrent: 10 } }, { paused: (p, ms) => paused.push([p, ms]) });
    const log: string[] = [];
    const first = track(limiter, "openai", log, "first");
    const other = track(limiter, "openai", log, "other");
    await settle();
    // The first call got a 429 with Retry-After: 2 s; the other one is still streaming.
    first.permit!.release(2000);
    expect(paused).toEqual([["openai", 2000]]);
    const waiting = ["w1", "w2", "w3"].map((n) => track(limiter, "openai", log, n));
    await jest.advanceTimersByTimeAsync(1999);
    expect(log).toEqual(["first", "other"]);
    await jest.advanceTimersByTimeAsync(1);
    // The pause is over: one probe goes, the others wait for its answer.
    expect(log).toEqual(["first", "other", "w1"]);
    expect(limiter.state("openai")).toMatchObject({ probing: true, waiting: 2 });
    // The probe gets a 429 again: another pause, another probe after it.
    waiting[0].permit!.release(1000);
    await jest.advanceTimersByTimeAsync(999);
    expect(log).toEqual(["first", "other", "w1"]);
    await jest.advanceTimersByTimeAsync(1);
    expect(log).toEqual(["first", "other", "w1", "w2"]);
    // This probe is answered (headers of a success): everyone goes.
    waiting[1].permit!.answered();
    await settle();
    expect(log).toEqual(["first", "other", "w1", "w2", "w3"]);
    expect(limiter.state("openai")).toMatchObject({ probing: false, waiting: 0 });
    // The other call, still in flight through all this, was never the probe: its answer changes nothing.
    other.permit!.answered();
    other.permit!.release();
  });

  it("a probe that ends without a Retry-After (another error) lets the others go too", async () => {
    const limiter = new ProviderLimiter({ "*": {} });
    const log: string[] = [];
    const first = track(limiter, "x", log, "first");
    await settle();
    first.permit!.release(500);
    const probe = track(limiter, "x", log, "probe");
    const next = track(limiter, "x", log, "next");
    await jest.advanceTimersByTimeAsync(500);
    expect(log).toEqual(["first", "probe"]);
    probe.permit!.release();
    await settle();
    expect(log).toEqual(["first", "probe", "next"]);
    expect(next.permit!.waitedMs).toBe(500);
  });

  it("caps a pause at MAX_PAUSE_MS", async () => {
    const limiter = new ProviderLimiter({ openai: {} });
    const log: string[] = [];
    const first = track(limiter, "openai", log, "first");
    await settle();
    first.permit!.release(3_600_000);
    track(limiter, "openai", log, "later");
    await jest.advanceTimersByTimeAsync(MAX_PAUSE_MS);
    expect(log).toEqual(["first", "later"]);
  });

  it("a call cancelled while waiting leaves the queue; the others keep their turn", async () => {
    const waitingCounts: number[] = [];
    let count = 0;
    const limiter = new ProviderLimiter(
      { openai: { maxConcurrent: 1 } },
      { waiting: (_p, delta) => waitingCounts.push((count += delta)) },
    );
    const log: string[] = [];
    const first = track(limiter, "openai", log, "first");
    const controller = new AbortController();
    const cancelled = track(limiter, "openai", log, "cancelled", controller.signal);
    const last = track(limiter, "openai", log, "last");
    await settle();
    controller.abort(new Error("run cancelled"));
    await settle();
    expect((cancelled.error as Error).message).toBe("run cancelled");
    expect(limiter.state("openai")).toMatchObject({ inFlight: 1, waiting: 1 });
    first.permit!.release();
    await settle();
    expect(log).toEqual(["first", "last"]);
    expect(last.permit).toBeDefined();
    expect(count).toBe(0);
    // Already cancelled: refused at once.
    const again = track(limiter, "openai", log, "again", controller.signal);
    await settle();
    expect(again.error).toBeDefined();
  });

  it("limits only the providers named, each under '*' on its own, and at most MAX_WILDCARD_PROVIDERS gates", async () => {
    const unlimited = new ProviderLimiter({ openai: { maxConcurrent: 1 } });
    const log: string[] = [];
    track(unlimited, "anthropic", log, "a1");
    track(unlimited, "anthropic", log, "a2");
    await settle();
    expect(log).toEqual(["a1", "a2"]);
    expect(unlimited.state("anthropic")).toBeUndefined();

    const wildcard = new ProviderLimiter({ "*": { maxConcurrent: 1 }, openai: { maxConcurrent: 2 } });
    const seen: string[] = [];
    track(wildcard, "anthropic", seen, "a1");
    track(wildcard, "anthropic", seen, "a2");
    track(wildcard, "google", seen, "g1");
    track(wildcard, "openai", seen, "o1");
    track(wildcard, "openai", seen, "o2");
    await settle();
    expect(seen).toEqual(["a1", "g1", "o1", "o2"]);
    const made: string[] = [];
    for (let i = 0; i < MAX_WILDCARD_PROVIDERS + 3; i++) track(wildcard, `made-up-${i}`, made, `m${i}`);
    await settle();
    // Each of the first ones (two providers above, then made-up ones) has a gate; past the bound they share "*":
    // one at once, the others wait.
    expect(made).toHaveLength(MAX_WILDCARD_PROVIDERS - 2 + 1);
    expect(wildcard.state(`made-up-${MAX_WILDCARD_PROVIDERS + 10}`)).toMatchObject({ inFlight: 1, waiting: 4 });
  });

  it("reads the pause a response asks for: 429 and 5xx with Retry-After only", () => {
    expect(pauseAsked({ status: 429, headers: { "retry-after": "2" } })).toBe(2000);
    expect(pauseAsked({ status: 529, headers: { "retry-after-ms": "150" } })).toBe(150);
    expect(pauseAsked({ status: 503, headers: { "retry-after": "1" } })).toBe(1000);
    expect(pauseAsked({ status: 429, headers: {} })).toBeUndefined();
    expect(pauseAsked({ status: 400, headers: { "retry-after": "2" } })).toBeUndefined();
    expect(pauseAsked({ status: 200, headers: { "retry-after": "2" } })).toBeUndefined();
    expect(pauseAsked({})).toBeUndefined();
  });
});

describe("bad provider limits", () => {
  /** The error `fn` throws (or rejects with), expected to be a ProviderLimitsError. */
  async function refusal(fn: () => unknown): Promise<ProviderLimitsError> {
    try {
      await fn();
    } catch (err) {
      expect(err).toBeInstanceOf(ProviderLimitsError);
      expect(err).toBeInstanceOf(TypeError);
      return err as ProviderLimitsError;
    }
    throw new Error("not refused");
  }

  it.each([
    [
      { openai: { maxConcurrent: 0 } },
      "providerLimits.openai.maxConcurrent",
      "must be an integer of at least 1, got 0",
    ],
    [{ openai: { maxConcurrent: 2.5 } }, "providerLimits.openai.maxConcurrent", "got 2.5"],
    [{ openai: { maxConcurrent: "4" } }, "providerLimits.openai.maxConcurrent", 'got "4"'],
    [{ openai: { requestsPerSecond: 0 } }, "providerLimits.openai.requestsPerSecond", "must be a number above 0"],
    [{ openai: { requestsPerSecond: -1 } }, "providerLimits.openai.requestsPerSecond", "got -1"],
    [{ openai: { requestsPerSecond: Infinity } }, "providerLimits.openai.requestsPerSecond", "got Infinity"],
    [{ openai: { rps: 3 } }, "providerLimits.openai.rps", "is not a provider limit"],
    [{ openai: 3 }, "providerLimits.openai", "must be an object"],
    [{ openai: null }, "providerLimits.openai", "got null"],
    [[{ maxConcurrent: 1 }], "providerLimits", "must be an object of limits by provider name, got an array"],
    ["openai=3", "providerLimits", 'got "openai=3"'],
  ])("%j is refused naming %s", async (value, field, problem) => {
    const err = await refusal(() => checkProviderLimits(value));
    expect(err.field).toBe(field);
    expect(err.message).toContain(field);
    expect(err.message).toContain(problem);
  });

  it("keeps good limits as given", () => {
    expect(checkProviderLimits({ openai: { maxConcurrent: 8, requestsPerSecond: 0.5 }, "*": {} })).toEqual({
      openai: { maxConcurrent: 8, requestsPerSecond: 0.5 },
      "*": {},
    });
  });

  it("JSON that does not parse names where it came from", async () => {
    const err = await refusal(() => parseProviderLimits("{openai: 3}"));
    expect(err.field).toBe("JAI_PROVIDER_LIMITS");
    expect(err.message).toMatch(/^JAI_PROVIDER_LIMITS must be JSON like/);
  });

  it("the worker process refuses a bad --provider-limits / JAI_PROVIDER_LIMITS before connecting", async () => {
    jest.useRealTimers();
    const cwd = mkdtempSync(path.join(tmpdir(), "jai-limits-"));
    const log: string[] = [];
    const fromFlag = await refusal(() =>
      runWorkerProcess({
        argv: ["--provider-limits", '{"openai":{"maxConcurrent":0}}'],
        env: { TEMPORAL_ADDRESS: "127.0.0.1:1" },
        cwd,
        log: (l) => log.push(l),
      }),
    );
    expect(fromFlag.field).toBe("--provider-limits (JAI_PROVIDER_LIMITS).openai.maxConcurrent");
    const fromEnv = await refusal(() =>
      runWorkerProcess({
        env: { TEMPORAL_ADDRESS: "127.0.0.1:1", JAI_PROVIDER_LIMITS: '{"anthropic":{"requestsPerSecond":"fast"}}' },
        cwd,
        log: (l) => log.push(l),
      }),
    );
    expect(fromEnv.field).toBe("--provider-limits (JAI_PROVIDER_LIMITS).anthropic.requestsPerSecond");
    expect(log).toEqual([]);
  });

  it("createAgentWorker refuses bad limits before it opens a connection", async () => {
    jest.useRealTimers();
    const err = await refusal(() => createAgentWorker({ providerLimits: { openai: { maxConcurrent: -2 } } }));
    expect(err.field).toBe("providerLimits.openai.maxConcurrent");
  });
});
