/**
 * OpenTelemetry traces of agent runs: Temporal's own interceptors
 * (@temporalio/interceptors-opentelemetry: start → workflow → activities,
 * context carried in Temporal headers) plus spans that follow the GenAI
 * semantic conventions: `chat {model}` for each model call, `execute_tool
 * {name}` for each tool call, and the provider's HTTP request under the model
 * call (src/worker/activities/provider-fetch.ts). Off unless a worker is given an
 * AgentTracing; the worker process turns it on from the standard OTEL_*
 * environment (OTLP over HTTP).
 */
import {
  context,
  propagation,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Span,
  type Tracer,
} from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { Resource } from "@opentelemetry/resources";
import { BasicTracerProvider, BatchSpanProcessor, type SpanProcessor } from "@opentelemetry/sdk-trace-base";
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from "@temporalio/interceptors-opentelemetry";
import type { WorkflowClientInterceptor } from "@temporalio/client";
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  InjectedSink,
  Next,
} from "@temporalio/worker";
import type { AssistantMessage } from "@jai/ai";
import type { ExecuteToolInput, ExecuteToolOutput, StreamAssistantInput } from "../../shared/wire.js";
import { replyMessage } from "../activities/model.js";
import { tracingWanted } from "./tracing-module.js";

/** Name of the tracer the agent's own spans come from. */
export const TRACER_NAME = "jai-agent";

export interface AgentTracing {
  /** The tracer provider (registered as the global one). */
  readonly provider: BasicTracerProvider;
  /** Activity interceptors: Temporal's context propagation, then the GenAI spans. */
  readonly activityInterceptors: ActivityInterceptorsFactory[];
  /** Client interceptors: give them to the Client that starts runs, so the run joins the caller's trace. */
  readonly clientInterceptors: WorkflowClientInterceptor[];
  /** The sink the workflow interceptors export workflow spans through. */
  readonly workflowExporter: InjectedSink<any>;
  /** Flushes and stops the exporters. */
  shutdown(): Promise<void>;
}

export interface AgentTracingOptions {
  /** Where spans go (e.g. a SimpleSpanProcessor over an InMemorySpanExporter in tests, a BatchSpanProcessor over OTLP). */
  spanProcessor: SpanProcessor;
  /** Service name on the resource; default OTEL_SERVICE_NAME or "jai-agent-worker". */
  serviceName?: string;
}

let contextManagerSet = false;

/** Sets up tracing for this process: a global tracer provider with `spanProcessor`, async context, the interceptors. */
export function createAgentTracing(options: AgentTracingOptions): AgentTracing {
  const resource = new Resource({
    "service.name": options.serviceName ?? process.env.OTEL_SERVICE_NAME ?? "jai-agent-worker",
  });
  const provider = new BasicTracerProvider({ resource, spanProcessors: [options.spanProcessor] });
  if (!contextManagerSet) {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    contextManagerSet = true;
  }
  trace.setGlobalTracerProvider(provider);
  // Temporal's interceptors carry the context in headers with the global propagator.
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  const tracer = provider.getTracer(TRACER_NAME);
  return {
    provider,
    activityInterceptors: [
      (ctx) => ({
        inbound: new OpenTelemetryActivityInboundInterceptor(ctx, { tracer }),
        outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
      }),
      (ctx) => ({ inbound: new GenAiSpans(tracer, ctx.info.activityType) }),
    ],
    clientInterceptors: [new OpenTelemetryWorkflowClientInterceptor({ tracer })],
    workflowExporter: makeWorkflowExporter(options.spanProcessor, resource),
    shutdown: () => provider.shutdown(),
  };
}

/**
 * Tracing from the standard OpenTelemetry environment: on when
 * OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT /
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; the exporter reads those and OTEL_EXPORTER_OTLP_HEADERS itself),
 * off when OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export async function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<AgentTracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const { OTLPTraceExporter } = await import("@opentelemetry/exporter-trace-otlp-http");
  return createAgentTracing({ spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter()) });
}

/** `chat {model}` and `execute_tool {name}` spans, children of Temporal's RunActivity span. */
class GenAiSpans implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly tracer: Tracer,
    private readonly activityType: string,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, "execute">): Promise<unknown> {
    const span =
      this.activityType === "streamAssistantMessage"
        ? chatSpan(input.args[0] as StreamAssistantInput)
        : this.activityType === "executeTool"
          ? toolSpan(input.args[0] as ExecuteToolInput)
          : undefined;
    if (!span) return next(input);
    return this.tracer.startActiveSpan(span.name, { kind: span.kind, attributes: span.attributes }, (active) =>
      inSpan(active, async () => {
        const output = await next(input);
        span.after(active, output);
        // The activity's own output: a routed reply carries the queue the workflow sends the next call to.
        return output;
      }),
    );
  }
}

/** One GenAI span: its name, kind and attributes, and what the activity's output adds to it. */
interface SpanPlan {
  name: string;
  kind: SpanKind;
  attributes: Attributes;
  after(span: Span, output: unknown): void;
}

function chatSpan(call: StreamAssistantInput): SpanPlan {
  return {
    name: `chat ${call.model.id}`,
    kind: SpanKind.CLIENT,
    attributes: {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": call.model.provider,
      "gen_ai.system": call.model.provider,
      "gen_ai.request.model": call.model.id,
      ...(call.model.maxTokens ? { "gen_ai.request.max_tokens": call.model.maxTokens } : {}),
    },
    after(span, output) {
      const message = replyMessage(output) ?? (output as AssistantMessage);
      span.setAttributes({
        "gen_ai.response.model": message.model ?? call.model.id,
        "gen_ai.response.finish_reasons": [message.stopReason],
        "gen_ai.usage.input_tokens": message.usage?.input ?? 0,
        "gen_ai.usage.output_tokens": message.usage?.output ?? 0,
        ...(message.responseId ? { "gen_ai.response.id": message.responseId } : {}),
      });
      if (message.stopReason === "error") span.setStatus({ code: SpanStatusCode.ERROR, message: message.errorMessage });
    },
  };
}

function toolSpan(call: ExecuteToolInput): SpanPlan {
  return {
    name: `execute_tool ${call.toolName}`,
    kind: SpanKind.INTERNAL,
    attributes: {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": call.toolName,
      "gen_ai.tool.call.id": call.toolCallId,
      "gen_ai.tool.type": "function",
    },
    after(span, output) {
      if ((output as ExecuteToolOutput).isError)
        span.setStatus({ code: SpanStatusCode.ERROR, message: "tool returned an error result" });
    },
  };
}

/** Runs `work` as the span's body: a failure is recorded on the span and rethrown; the span always ends. */
async function inSpan<T>(span: Span, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    span.recordException(err as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
    throw err;
  } finally {
    span.end();
  }
}
