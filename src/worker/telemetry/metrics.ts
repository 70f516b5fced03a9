/**
 * The agent's Prometheus metrics, kept by one worker process: runs, turns,
 * tokens and cost by model, model-call latency and time to first token, tool
 * calls by tool, approvals waiting, context-cache hits, compactions. Counted
 * where things happen: model and tool activities through an activity
 * interceptor (their inputs and results), time to first token from the first
 * streamed event, run-level facts through the workflow's `metrics` sink (called
 * once per fact, never on replay). With several workers, sum over instances:
 * e.g. `sum(jai_agent_approvals_waiting)` (one worker may count a wait that
 * another worker saw end).
 */
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { getModels, getProviders, type Api, type AssistantMessage, type Model } from "@jai/ai";
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  InjectedSinks,
  Next,
} from "@temporalio/worker";
import type { AgentSinks } from "../../shared/definitions.js";
import type { AgentEvent, AgentEventSink } from "../../shared/contracts.js";
import type { ExecuteToolInput, ExecuteToolOutput, StreamAssistantInput } from "../../shared/wire.js";
import { replyMessage } from "../activities/model.js";

/** The `model` label of a model that is neither the worker's own nor in @jai/ai's catalogue (run input names it). */
export const OTHER_MODEL = "other";

let catalogue: ReadonlySet<string> | undefined;
/** `provider/id` of every model in @jai/ai's catalogue: a fixed, bounded set. */
function catalogueLabels(): ReadonlySet<string> {
  catalogue ??= new Set(
    getProviders().flatMap((p) => (getModels(p) as Model<Api>[]).map((m) => `${m.provider}/${m.id}`)),
  );
  return catalogue;
}

/** What the workflows report through the `metrics` sink. */
type AgentRunFacts = AgentSinks["metrics"];

const SECONDS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The worker's metrics: the run-level facts the workflows report through their `metrics` sink (definitions.ts), and the worker's own. */
export interface AgentMetrics extends AgentRunFacts {
  /** The registry the metrics live in (serve it with `registry.metrics()`). */
  readonly registry: Registry;
  /** A cached context prefix was used (hit) or read from the workflow (miss). */
  contextCache(hit: boolean): void;
  /** Activity interceptor that times model and tool calls. */
  readonly activityInterceptor: ActivityInterceptorsFactory;
  /** Wraps the worker's event sink to see the first streamed event of each model call. */
  wrapEvents(onEvent: AgentEventSink | undefined): AgentEventSink;
  /**
   * The worker's own models (its `models` option; `createAgentWorker` tells them). A `model` label is one of
   * these or of @jai/ai's catalogue, else `"other"`: run input, which may name any model id, cannot grow the
   * label set without bound.
   */
  addModels(models: Model<Api>[]): void;
}

type MetricsSink = InjectedSinks<AgentSinks>["metrics"];

/** Every run-level fact (a missing one is a type error in `metricsSink`). */
const FACTS = ["runStarted", "runEnded", "approvalsWaiting", "compacted", "modelFallback", "budgetExceeded"] as const;

/** The workflow's `metrics` sink, feeding `metrics` (none: one that drops every fact). */
export function metricsSink(metrics?: AgentMetrics): MetricsSink {
  const sink = (fact: (typeof FACTS)[number]) => ({
    fn: (_info: unknown, ...args: unknown[]) =>
      (metrics?.[fact] as ((...args: unknown[]) => void) | undefined)?.apply(metrics, args),
    callDuringReplay: false,
  });
  type Sinks = Record<(typeof FACTS)[number], ReturnType<typeof sink>>;
  return Object.fromEntries(FACTS.map((fact) => [fact, sink(fact)])) as Sinks;
}

/** The `metrics` sink of a worker without metrics (and of replays). */
export const noMetricsSink = (): MetricsSink => metricsSink();

/** Makers of metrics registered in `registry` (histograms with `buckets`). */
export function metricsIn(registry: Registry, buckets: number[]) {
  return {
    counter: <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter({ name, help, labelNames, registers: [registry] }),
    gauge: <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Gauge({ name, help, labelNames, registers: [registry] }),
    histogram: <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
      new Histogram({ name, help, labelNames, buckets, registers: [registry] }),
  };
}

/** Creates the agent metrics in `registry` (default: a registry of their own). */
export function createAgentMetrics(registry = new Registry()): AgentMetrics {
  const { counter, gauge, histogram } = metricsIn(registry, SECONDS);
  const m = {
    runsStarted: counter("jai_agent_runs_started_total", "Agent runs started", ["model"]),
    runsEnded: counter("jai_agent_runs_ended_total", "Agent runs ended, by stop reason", ["model", "stop_reason"]),
    turns: counter("jai_agent_turns_total", "Model calls that returned a message (turns)", ["model"]),
    tokens: counter("jai_agent_tokens_total", "Tokens by model and kind", ["model", "kind"]),
    cost: counter("jai_agent_cost_usd_total", "Cost in US dollars by model", ["model"]),
    modelLatency: histogram("jai_agent_model_call_seconds", "Model call duration (one activity attempt)", [
      "model",
      "outcome",
    ]),
    ttft: histogram(
      "jai_agent_model_time_to_first_token_seconds",
      "Time from the model call's start to its first streamed event",
      ["model"],
    ),
    toolLatency: histogram("jai_agent_tool_call_seconds", "Tool call duration (one activity attempt)", ["tool"]),
    toolErrors: counter("jai_agent_tool_errors_total", "Tool calls that ended in an error result or a failed attempt", [
      "tool",
    ]),
    approvals: gauge("jai_agent_approvals_waiting", "Tool calls waiting for approval (sum over workers)"),
    cache: counter(
      "jai_agent_context_cache_total",
      "Model calls whose context prefix came from this worker's cache (hit) or the workflow (miss)",
      ["result"],
    ),
    compactions: counter("jai_agent_compactions_total", "Context compactions", ["model"]),
    fallbacks: counter(
      "jai_agent_model_fallbacks_total",
      "Model calls given to the next model of a run's fallback chain",
      ["from", "to"],
    ),
    budgetStops: counter("jai_agent_budget_exceeded_total", "Runs ended by a limit of their budget", ["limit"]),
  };
  const own = new Set<string>();
  /** The `model` label of `provider/id`: a model the worker knows, else OTHER_MODEL. */
  const label = (model: string): string => (own.has(model) || catalogueLabels().has(model) ? model : OTHER_MODEL);
  /** Model calls in flight by run, until their first streamed event. */
  const awaitingFirst = new Map<string, { model: string; start: number }>();

  function observeModel(
    input: StreamAssistantInput,
    start: number,
    result: AssistantMessage | undefined,
    failed: boolean,
  ): void {
    const model = label(`${input.model.provider}/${input.model.id}`);
    const seconds = (performance.now() - start) / 1000;
    m.modelLatency.observe({ model, outcome: failed ? "failed" : (result?.stopReason ?? "unknown") }, seconds);
    if (!result) return;
    m.turns.inc({ model });
    const u = result.usage;
    if (u) {
      m.tokens.inc({ model, kind: "input" }, u.input);
      m.tokens.inc({ model, kind: "output" }, u.output);
      m.tokens.inc({ model, kind: "cache_read" }, u.cacheRead);
      m.tokens.inc({ model, kind: "cache_write" }, u.cacheWrite);
      m.cost.inc({ model }, u.cost.total);
    }
  }

  class Inbound implements ActivityInboundCallsInterceptor {
    constructor(
      private readonly info: { activityType: string; workflowExecution?: { workflowId: string; runId: string } },
    ) {}
    async execute(
      input: ActivityExecuteInput,
      next: Next<ActivityInboundCallsInterceptor, "execute">,
    ): Promise<unknown> {
      const type = this.info.activityType;
      const start = performance.now();
      if (type === "streamAssistantMessage") {
        const args = input.args[0] as StreamAssistantInput;
        const run = `${this.info.workflowExecution?.workflowId}/${this.info.workflowExecution?.runId}`;
        awaitingFirst.set(run, { model: label(`${args.model.provider}/${args.model.id}`), start });
        try {
          const result = await next(input);
          observeModel(args, start, replyMessage(result), false);
          return result;
        } catch (err) {
          observeModel(args, start, undefined, true);
          throw err;
        } finally {
          awaitingFirst.delete(run);
        }
      }
      if (type === "executeTool") {
        const tool = (input.args[0] as ExecuteToolInput).toolName;
        let failed = true;
        try {
          const output = (await next(input)) as ExecuteToolOutput;
          failed = output.isError;
          return output;
        } finally {
          m.toolLatency.observe({ tool }, (performance.now() - start) / 1000);
          if (failed) m.toolErrors.inc({ tool });
        }
      }
      return next(input);
    }
  }

  return {
    registry,
    runStarted: (model) => m.runsStarted.inc({ model: label(model) }),
    runEnded: (model, stopReason) => m.runsEnded.inc({ model: label(model), stop_reason: stopReason }),
    approvalsWaiting: (delta) => m.approvals.inc(delta),
    compacted: (model) => m.compactions.inc({ model: label(model) }),
    modelFallback: (from, to) => m.fallbacks.inc({ from: label(from), to: label(to) }),
    budgetExceeded: (limit) => m.budgetStops.inc({ limit }),
    addModels(models) {
      for (const model of models) own.add(`${model.provider}/${model.id}`);
    },
    contextCache: (hit) => m.cache.inc({ result: hit ? "hit" : "miss" }),
    activityInterceptor: (ctx) => ({ inbound: new Inbound(ctx.info) }),
    wrapEvents(onEvent) {
      return (event: AgentEvent, run) => {
        if (event.type === "message_update" || event.type === "message_start") {
          const key = `${run.workflowId}/${run.runId}`;
          const pending = awaitingFirst.get(key);
          // message_start of the assistant message comes with the stream's start event; its first delta is the first token.
          if (pending && event.type === "message_update") {
            awaitingFirst.delete(key);
            m.ttft.observe({ model: pending.model }, (performance.now() - pending.start) / 1000);
          }
        }
        return onEvent?.(event, run);
      };
    },
  };
}
