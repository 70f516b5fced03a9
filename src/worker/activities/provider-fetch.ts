/**
 * What the provider SDKs hide from us, recovered at the fetch layer.
 *
 * pi-ai's onResponse hook only fires for successful responses, and the
 * OpenAI/Anthropic SDKs retry 429/5xx/connection errors on their own. Calls of
 * the model activity carry a marker header; for those calls (and only those)
 * a wrapper around global fetch records status, headers and the time of the
 * last byte, and marks every error response `x-should-retry: false` so that
 * only Temporal retries. A connection failure becomes a synthetic 503 with the
 * same mark, for the same reason. The provider's own error object is recorded
 * too, from an error response's body or an error event inside a stream
 * (`data: {"error": …}`, `event: error`), since the SDKs keep only its message.
 * Nothing here decides what a failure means: classify.ts does.
 */
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { providerErrorOf, type ProviderError } from "./classify.js";

export const CALL_HEADER = "x-jai-model-call";

export interface ProviderCallRecord {
  /** HTTP status of the provider's response, once it arrived. */
  status?: number;
  /** Its headers, lower-cased. */
  headers?: Record<string, string>;
  /** Set when no response arrived at all (connection refused, reset before headers, DNS...). */
  networkError?: string;
  /** Epoch ms of the last byte received (headers or body); the stall watchdog reads it. */
  lastByteAt?: number;
  /** Set when the response body broke off (connection reset mid-stream). */
  bodyError?: string;
  /** The provider's error object, from an error body or an error event in the stream. */
  providerError?: ProviderError;
}

const calls = new Map<string, ProviderCallRecord>();
let installed = false;
let counter = 0;

// Errors may come from another realm (e.g. under jest's vm), so no instanceof: read what is there.
function describe(err: unknown): string {
  const e = err as { message?: unknown; cause?: { code?: string; message?: string } } | undefined;
  return [String(e?.message ?? err), e?.cause?.code ?? e?.cause?.message].filter(Boolean).join(": ");
}

function toRecord(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, key) => (out[key.toLowerCase()] = value));
  return out;
}

function install(): void {
  if (installed) return;
  installed = true;
  const original = globalThis.fetch;
  globalThis.fetch = async function trackedFetch(
    input: Parameters<typeof fetch>[0],
    init?: RequestInit,
  ): Promise<Response> {
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    const id = headers.get(CALL_HEADER);
    const record = id ? calls.get(id) : undefined;
    if (!id || !record) return original(input, init);
    headers.delete(CALL_HEADER);
    const span = httpSpan(input, init);
    let response: Response;
    try {
      response = await original(input, { ...init, headers });
    } catch (err) {
      span.end(undefined, describe(err));
      if (init?.signal?.aborted) throw err;
      record.networkError = describe(err);
      const body = JSON.stringify({
        error: { type: "connection_error", message: `connection failed: ${record.networkError}` },
      });
      return new Response(body, {
        status: 503,
        headers: { "content-type": "application/json", "x-should-retry": "false" },
      });
    }
    record.status = response.status;
    span.status(response.status);
    record.headers = toRecord(response.headers);
    record.lastByteAt = Date.now();
    const marked = new Headers(response.headers);
    if (!response.ok) {
      marked.set("x-should-retry", "false");
      // Error bodies are small: read it whole, keep the provider's error object, hand the SDK the same text.
      const text = await response.text().catch(() => "");
      record.providerError = providerErrorOf(parseJson(text));
      span.end(response.status);
      return new Response(text, { status: response.status, statusText: response.statusText, headers: marked });
    }
    const reader = response.body?.getReader();
    const sniffer = new StreamErrorSniffer(record);
    // Once the SDK cancelled the body (it stops reading after an error event), nothing more is read, written or recorded.
    let cancelled = false;
    const body =
      reader &&
      new ReadableStream<Uint8Array>({
        async pull(controller) {
          try {
            const { done, value } = await reader.read();
            if (cancelled) return;
            if (done) {
              span.end(response.status);
              return controller.close();
            }
            record.lastByteAt = Date.now();
            sniffer.push(value);
            controller.enqueue(value);
          } catch (err) {
            if (cancelled) return;
            // Our own abort (cancellation, the stall watchdog) is not the provider's stream breaking.
            if (!init?.signal?.aborted) record.bodyError = describe(err);
            span.end(response.status, describe(err));
            controller.error(err);
          }
        },
        cancel: (reason) => {
          cancelled = true;
          span.end(response.status);
          return reader.cancel(reason);
        },
      });
    if (!reader) span.end(response.status);
    return new Response(body ?? null, { status: response.status, statusText: response.statusText, headers: marked });
  } as typeof fetch;
}

/**
 * The provider's HTTP request as an OpenTelemetry client span (HTTP semantic
 * conventions), under the model call's span; it lasts until the body is read.
 * A no-op unless tracing is set up (src/worker/telemetry/tracing.ts).
 */
function httpSpan(input: Parameters<typeof fetch>[0], init: RequestInit | undefined) {
  const url = new URL(typeof input === "string" ? input : input instanceof URL ? input.href : input.url);
  const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
  const span = trace.getTracer("jai-agent").startSpan(method, {
    kind: SpanKind.CLIENT,
    attributes: {
      "http.request.method": method,
      "url.full": `${url.origin}${url.pathname}`,
      "server.address": url.hostname,
      ...(url.port ? { "server.port": Number(url.port) } : {}),
    },
  });
  let ended = false;
  return {
    status(code: number) {
      span.setAttribute("http.response.status_code", code);
    },
    end(code?: number, error?: string) {
      if (ended) return;
      ended = true;
      if (error || (code !== undefined && code >= 400))
        span.setStatus({ code: SpanStatusCode.ERROR, message: error ?? `HTTP ${code}` });
      if (error) span.setAttribute("error.type", error);
      span.end();
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** Largest SSE event kept while waiting for its end; longer ones (big deltas) cannot be error events worth reading. */
const MAX_EVENT_CHARS = 256 * 1024;

/** Watches an SSE body for the provider's error events, without changing a byte. */
class StreamErrorSniffer {
  private decoder = new TextDecoder();
  private pending = "";

  constructor(private readonly record: ProviderCallRecord) {}

  push(chunk: Uint8Array): void {
    if (this.record.providerError) return;
    this.pending += this.decoder.decode(chunk, { stream: true });
    const events = this.pending.split(/\r?\n\r?\n/);
    this.pending = events.pop() ?? "";
    if (this.pending.length > MAX_EVENT_CHARS) this.pending = "";
    for (const event of events) {
      // Cheap test first: only events that mention an error are parsed.
      if (!event.includes("error")) continue;
      let name = "";
      const data: string[] = [];
      for (const line of event.split(/\r?\n/)) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      }
      const parsed = parseJson(data.join("\n"));
      const error =
        (name === "error" || (parsed as { error?: unknown } | undefined)?.error !== undefined) &&
        providerErrorOf(parsed, true);
      if (error) {
        this.record.providerError = error;
        return;
      }
    }
  }
}

/** Starts tracking one model call; pass `headers` to pi-ai's stream options and `dispose` when done. */
export function trackProviderCall(): { headers: Record<string, string>; record: ProviderCallRecord; dispose(): void } {
  install();
  const id = `${process.pid}-${++counter}`;
  const record: ProviderCallRecord = {};
  calls.set(id, record);
  return { headers: { [CALL_HEADER]: id }, record, dispose: () => void calls.delete(id) };
}
