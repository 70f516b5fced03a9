/**
 * What a worker needs to know about tracing before it decides to trace: the workflow interceptors module to
 * bundle, and whether the standard OTEL_* environment asks for traces. Apart from src/worker/telemetry/tracing.ts so a
 * worker that does not trace never loads OpenTelemetry (~150 modules at every start).
 */
import { createRequire } from "node:module";
import { resolveOptional, TRACING_PACKAGES } from "../../node/optional-package.js";

/** The workflow interceptors module to bundle with the workflows (see bundleAgentWorkflows's `tracing`). */
export function workflowTracingModule(): string {
  return resolveOptional("traces (tracing: true)", TRACING_PACKAGES, () =>
    createRequire(import.meta.url).resolve("@temporalio/interceptors-opentelemetry/lib/workflow-interceptors"),
  );
}

/**
 * Whether the environment asks for traces (the rules `tracingFromEnv` documents): OTEL_TRACES_EXPORTER=otlp or an
 * OTLP endpoint, unless OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export function tracingWanted(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return false;
  return (
    env.OTEL_TRACES_EXPORTER === "otlp" ||
    Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
  );
}
