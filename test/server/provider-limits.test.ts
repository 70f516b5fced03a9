/**
 * Provider limits on a real worker (real dev server, @jai/ai's OpenAI provider over HTTP to the wire-format test
 * server, which counts its requests in flight): 50 concurrent runs under `maxConcurrent: 3`, a requests-per-second
 * limit, and a 429 storm with Retry-After that pauses every call of the worker instead of multiplying retries.
 *
 * Every verdict comes from what the system recorded, not from how fast the machine is: the provider server's
 * requests and answers, the worker's metrics, and the limiter's reports (each call it lets go, each pause), in
 * the order it made them. The limiter's timing on a clock it does not wait for is test/unit/provider-limits.test.ts's
 * (fake timers); here the test server holds an answer until the test has seen what it waits for.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Counter, Histogram } from "prom-client";
import type { Api, Model } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { createAgentMetrics, type AgentMetrics } from "../../src/worker/telemetry/metrics.js";
import type { ProviderLimits } from "../../src/worker/activities/provider-limits.js";
import { waitFor } from "../support/crash/harness.js";
import { deferred, openTestEnv, testWorker, textOf, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { ProviderServer, type Step } from "../support/provider-server.js";

let env: TestEnv;
let server: ProviderServer;

beforeAll(async () => {
  env = await openTestEnv();
  server = await new ProviderServer().start();
});
afterAll(async () => {
  await server?.stop();
  await env?.close();
});

const answer = (step: Partial<Step> = {}): Step => ({
  text: "Limited but here.",
  usage: { input: 20, output: 4 },
  ...step,
});

/** What the worker's limiter reported, in the order it reported it: a call let go (`grant`), or a pause. */
interface Report {
  kind: "grant" | "pause";
  at: number;
}

/**
 * Metrics whose provider-limit metrics also note each report of the limiter, with the time it came. The limiter
 * reports into the metrics registry (src/worker/telemetry/provider-limit-metrics.ts makes each metric only when the
 * registry has none of that name): a call let go is an observation of the wait histogram, a pause an increment
 * of the pause counter, both made in the same synchronous step as the decision.
 */
function recordedMetrics(): { metrics: AgentMetrics; reports: Report[] } {
  const metrics = createAgentMetrics();
  const reports: Report[] = [];
  const wait = new Histogram({
    name: "jai_agent_provider_limit_wait_seconds",
    help: "Time a model call waited for its provider's limit on this worker (0 when it went at once)",
    labelNames: ["provider"],
    registers: [metrics.registry],
  });
  const observe = wait.observe.bind(wait) as (...args: unknown[]) => void;
  wait.observe = ((...args: unknown[]) => {
    reports.push({ kind: "grant", at: Date.now() });
    observe(...args);
  }) as typeof wait.observe;
  const pauses = new Counter({
    name: "jai_agent_provider_pauses_total",
    help: "Error answers with Retry-After that paused every call of this worker to the provider",
    labelNames: ["provider"],
    registers: [metrics.registry],
  });
  const inc = pauses.inc.bind(pauses) as (...args: unknown[]) => void;
  pauses.inc = ((...args: unknown[]) => {
    reports.push({ kind: "pause", at: Date.now() });
    inc(...args);
  }) as typeof pauses.inc;
  return { metrics, reports };
}

interface ManyOptions {
  /** Runs beside the runs, with the worker's metrics (e.g. to release answers the test server holds). */
  during?: (metrics: AgentMetrics) => Promise<void>;
}

/** `count` runs started at once against one worker with `providerLimits`; resolves with their results. */
async function runMany(count: number, providerLimits: ProviderLimits, model: Model<Api>, options: ManyOptions = {}) {
  const { metrics, reports } = recordedMetrics();
  const { worker, taskQueue } = await testWorker(env, [], {
    models: [model],
    getApiKey: () => "sk-test-limits",
    providerLimits,
    metrics,
    // The workflows of many runs run off the thread that sends the requests, as in a deployed worker
    // (test/support/in-thread-workflows.ts).
    workerOptions: { debugMode: false },
  });
  const results = await worker.runUntil(async () => {
    const handles = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        startAgentRun(env.client, {
          taskQueue,
          workflowId: uniqueId(`limits-${i}`),
          model,
          prompt: `Call ${i}`,
          // A held answer sends no byte: the stall watchdog (the heartbeat timeout) must not end it on a busy
          // machine, nor a late heartbeat retry a call (each run's requests are counted).
          modelActivity: { heartbeatTimeout: "60s", retry: { initialInterval: "100ms", maximumAttempts: 20 } },
        }),
      ),
    );
    const [results] = await Promise.all([Promise.all(handles.map((h) => h.result())), options.during?.(metrics)]);
    return results;
  });
  return { results, reports, metrics: await metrics.registry.getMetricsAsJSON() };
}

/** The value of a metric's sample whose name (and provider label) match. */
function sample(metrics: Awaited<ReturnType<typeof runMany>>["metrics"], name: string, provider: string) {
  for (const metric of metrics)
    for (const v of (metric as { values: { metricName?: string; value: number; labels: Record<string, unknown> }[] })
      .values)
      if ((v.metricName ?? metric.name) === name && v.labels.provider === provider) return v.value;
  return undefined;
}

/** Calls waiting for the provider's limit on the worker now (its gauge). */
async function waitingNow(metrics: AgentMetrics): Promise<number> {
  return sample(await metrics.registry.getMetricsAsJSON(), "jai_agent_provider_limit_waiting", "openai") ?? 0;
}

describe("provider limits", () => {
  it("50 concurrent runs under maxConcurrent 3: never more than 3 requests in flight, every run completes", async () => {
    const model = server.openAIModel({ id: "gpt-limit-concurrent" });
    server.script([]);
    // The first three answers are held until the cap is full and another call waits for it: the cap is reached
    // whatever the machine's speed (a limiter letting fewer go would leave them held: the bound below fails it).
    const full = deferred();
    server.responder = (_request, index) => answer(index < 3 ? { until: full.promise } : {});
    const { results, metrics } = await runMany(50, { openai: { maxConcurrent: 3 } }, model, {
      during: async (metrics) => {
        await waitFor(
          async () => server.inFlight === 3 && (await waitingNow(metrics)) > 0,
          60_000,
          "3 requests held at the provider and a call waiting for the limit",
        );
        full.resolve();
      },
    });
    expect(results.map((r) => r.stopReason)).toEqual(Array(50).fill("stop"));
    expect(results.every((r) => textOf(r.messages[1]) === "Limited but here.")).toBe(true);
    expect(server.requests).toHaveLength(50);
    // Unlimited, the same runs have 7 requests in flight at most on a 2-core machine (measured); while three
    // were held, the other 47 waited at the worker.
    expect(server.maxInFlight).toBe(3);
    // The wait shows in the worker's metrics: every call observed, and the queued ones waited.
    expect(sample(metrics, "jai_agent_provider_limit_wait_seconds_count", "openai")).toBe(50);
    expect(sample(metrics, "jai_agent_provider_limit_wait_seconds_sum", "openai")).toBeGreaterThan(0);
    expect(sample(metrics, "jai_agent_provider_limit_waiting", "openai")).toBe(0);
  });

  it("requestsPerSecond holds: the worker lets at most the limit go in any 1 s, 20 requests over ≥ 3.8 s", async () => {
    const model = server.openAIModel({ id: "gpt-limit-rate" });
    server.script([]);
    server.responder = () => answer();
    const rate = 5;
    const started = Date.now();
    const { results, reports } = await runMany(20, { openai: { requestsPerSecond: rate } }, model);
    expect(results.map((r) => r.stopReason)).toEqual(Array(20).fill("stop"));
    expect(server.requests).toHaveLength(20);
    // Every request went through the limiter: one call let go per request.
    const grants = reports.filter((r) => r.kind === "grant").map((r) => r.at);
    expect(grants).toHaveLength(20);
    // Let go 200 ms apart at least (the limiter's next time is its last grant + 1000 / rate, and it never lets a
    // call go before it): a window [t, t + 1 s) holds 5. A report's time is taken a statement after the decision,
    // in the same synchronous step, so one more is allowed for a millisecond that turned between the two.
    // (Arrival times at the provider are not counted: a busy machine's event loop bunches them up.)
    const worst = Math.max(...grants.map((t) => grants.filter((u) => u >= t && u < t + 1000).length));
    expect(worst).toBeLessThanOrEqual(rate + 1);
    // 20 calls at 5/s are let go over at least 19 intervals of 200 ms, so the last request reached the provider
    // at least 3.8 s after the runs were started, however slow the machine (unlimited: all 20 within one second
    // on an idle one).
    expect(Math.max(...server.requests.map((r) => r.at)) - started).toBeGreaterThanOrEqual(19 * 200);
  });

  it("a 429 with Retry-After pauses every call of the worker, then one probes: the storm does not multiply retries", async () => {
    const model = server.openAIModel({ id: "gpt-limit-storm" });
    server.script([]);
    const runs = 30;
    const stormMs = 2500;
    let stormStart: number | undefined;
    server.responder = (request) => {
      stormStart ??= request.at;
      if (request.at - stormStart < stormMs)
        return { fault: { kind: "status", status: 429, message: "slow down", headers: { "retry-after": "1" } } };
      return answer();
    };
    const { results, metrics, reports } = await runMany(runs, { openai: { maxConcurrent: 5 } }, model);
    expect(results.map((r) => r.stopReason)).toEqual(Array(runs).fill("stop"));
    const storm = server.requests.filter((r) => r.status === 429);
    // Bounded by the cap's first burst (the calls let go before the first 429 came back: at most maxConcurrent)
    // plus one probe per pause of 1 s that ended within the storm, whatever the number of runs and however slow
    // the machine (slower: fewer probes in the storm). Without the shared pause every run sends its first request
    // into the storm and retries once a second: at least `runs` (30); measured with the pause left out: 59.
    expect(storm.length).toBeLessThanOrEqual(5 + Math.ceil(stormMs / 1000) + 2);
    expect(sample(metrics, "jai_agent_provider_pauses_total", "openai")).toBeGreaterThanOrEqual(1);
    // The other calls waited: from the first pause to the last, the worker let at most one call go between two
    // pauses (the probe; its 429 is the next pause). The limiter's reports, in the order it made them.
    const kinds = reports.map((r) => r.kind);
    const firstPause = kinds.indexOf("pause");
    const lastPause = kinds.lastIndexOf("pause");
    const between = kinds
      .slice(firstPause, lastPause + 1)
      .join(" ")
      .split("pause")
      .map((part) => part.split(" ").filter((k) => k === "grant").length);
    expect(Math.max(...between)).toBeLessThanOrEqual(1);
    // Before the first pause, at most the cap went; after the last, the probe's success let every run go.
    expect(kinds.slice(0, firstPause).length).toBeLessThanOrEqual(5);
    // After the storm each run needed one more request: the total is the storm plus one per run.
    expect(server.requests.length).toBe(storm.length + runs);
  });

  it("a run cancelled while its model call waits for the limit ends as aborted, having sent nothing", async () => {
    const model = server.openAIModel({ id: "gpt-limit-cancel" });
    server.script([]);
    // The first call holds the only slot until the test lets it go: after the cancelled run has ended.
    const slot = deferred();
    server.responder = () => answer({ until: slot.promise });
    const metrics = createAgentMetrics();
    const { worker, taskQueue } = await testWorker(env, [], {
      models: [model],
      getApiKey: () => "sk-test-limits",
      providerLimits: { openai: { maxConcurrent: 1 } },
      metrics,
    });
    const start = (name: string) =>
      startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId(name),
        model,
        prompt: name,
        // The held answer sends no byte: no stall watchdog (the heartbeat timeout) ends it meanwhile.
        modelActivity: { heartbeatTimeout: "60s" },
      });
    const [holding, waiting] = await worker.runUntil(async () => {
      const first = await start("holds-the-slot");
      await waitFor(() => server.requests.length === 1, 60_000, "the first call to reach the provider");
      const second = await start("waits");
      await waitFor(async () => (await waitingNow(metrics)) === 1, 60_000, "the second call to wait for the limit");
      await second.cancel();
      // Ends while the slot is still held: a cancel that waited for the slot would never end here.
      const cancelled = await within(second.result(), 60_000, "the cancelled run to end while the slot is held");
      const stillHeld = server.inFlight === 1 && server.requests[0].status === undefined;
      slot.resolve();
      return [await first.result(), { result: cancelled, stillHeld }] as const;
    });
    expect(waiting.result.stopReason).toBe("aborted");
    expect(waiting.stillHeld).toBe(true);
    expect(holding.stopReason).toBe("stop");
    expect(server.requests).toHaveLength(1);
    expect(await waitingNow(metrics)).toBe(0);
  });
});
