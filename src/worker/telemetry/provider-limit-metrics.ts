/**
 * Metrics of the provider limits (src/worker/activities/provider-limits.ts), in the agent's registry: how long model
 * calls waited for their provider's limit, how many wait now, and the pauses a Retry-After caused. The `provider`
 * label is a limit's name: a provider named in `providerLimits`, or one under `"*"` (at most
 * MAX_WILDCARD_PROVIDERS of them, then `"*"`), so run input cannot grow the label set without bound.
 */
import type { Registry } from "prom-client";
import type { ProviderLimiterHooks } from "../activities/provider-limits.js";
import { metricsIn } from "./metrics.js";

const SECONDS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The hooks that feed the provider-limit metrics of `registry`. */
export function providerLimitMetrics(registry: Registry): ProviderLimiterHooks {
  const { counter, gauge, histogram } = metricsIn(registry, SECONDS);
  /** The metric named `name` in `registry`, made once (a second worker on the same registry shares it). */
  const once = <M>(name: string, make: (name: string) => M): M =>
    (registry.getSingleMetric(name) as M | undefined) ?? make(name);
  const wait = once("jai_agent_provider_limit_wait_seconds", (name) =>
    histogram(name, "Time a model call waited for its provider's limit on this worker (0 when it went at once)", [
      "provider",
    ]),
  );
  const waiting = once("jai_agent_provider_limit_waiting", (name) =>
    gauge(name, "Model calls waiting for their provider's limit on this worker", ["provider"]),
  );
  const pauses = once("jai_agent_provider_pauses_total", (name) =>
    counter(name, "Error answers with Retry-After that paused every call of this worker to the provider", ["provider"]),
  );
  return {
    waited: (provider, ms) => wait.observe({ provider }, ms / 1000),
    waiting: (provider, delta) => waiting.inc({ provider }, delta),
    paused: (provider) => pauses.inc({ provider }),
  };
}
