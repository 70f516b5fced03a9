/**
 * A local HTTP server that speaks two providers' real streaming wire formats,
 * with scripted content and faults, so @jai/ai's real provider code runs end
 * to end in tests. Emitters only: nothing here parses a provider format.
 *
 * - POST /v1/chat/completions: OpenAI Chat Completions SSE (`chat.completion.chunk`s, usage last, `[DONE]`)
 * - POST /v1/messages: Anthropic Messages SSE (message_start, content_block_*, message_delta, message_stop)
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Api, Model } from "@jai/ai";

export type Fault =
  /** An error response; `body` replaces the generated error body (e.g. one copied from a provider's documentation). */
  | { kind: "status"; status: number; message?: string; headers?: Record<string, string>; body?: unknown }
  /**
   * HTTP 200, then after some chunks an error inside the stream, as each provider sends it:
   * `data: {"error": …}` (OpenAI-compatible) or `event: error` (Anthropic). `body` replaces the generated error object.
   */
  | { kind: "streamError"; afterChunks: number; type: string; message: string; code?: string; body?: unknown }
  | { kind: "reset"; afterChunks: number }
  | { kind: "stall"; afterChunks: number; ms: number }
  | { kind: "malformed"; afterChunks: number };

/** One scripted response; the format follows the request's path. */
export interface Step {
  thinking?: string;
  text?: string;
  toolCalls?: { id: string; name: string; args: Record<string, unknown> }[];
  usage?: { input: number; output: number };
  fault?: Fault;
  /** Waits this long before answering (the request counts as in flight meanwhile). */
  delayMs?: number;
  /** Answers once this settles (the request counts as in flight meanwhile): a test decides when, not a clock. */
  until?: Promise<unknown>;
}

export interface RecordedRequest {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  at: number;
  /** The status it was answered with, once answered. */
  status?: number;
}

/** Splits text into small deltas so the stream really streams. */
function pieces(text: string, size = 6): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out.length ? out : [""];
}

function openAIChunks(step: Step, model: string): string[] {
  const base = { id: "chatcmpl-test", object: "chat.completion.chunk", created: 1, model };
  const chunk = (delta: object, finish: string | null = null) =>
    JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] });
  const out = [chunk({ role: "assistant", content: "" })];
  if (step.text) for (const p of pieces(step.text)) out.push(chunk({ content: p }));
  (step.toolCalls ?? []).forEach((call, index) => {
    out.push(
      chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }),
    );
    for (const p of pieces(JSON.stringify(call.args)))
      out.push(chunk({ tool_calls: [{ index, function: { arguments: p } }] }));
  });
  out.push(chunk({}, step.toolCalls?.length ? "tool_calls" : "stop"));
  const usage = step.usage ?? { input: 10, output: 5 };
  out.push(
    JSON.stringify({
      ...base,
      choices: [],
      usage: { prompt_tokens: usage.input, completion_tokens: usage.output, total_tokens: usage.input + usage.output },
    }),
  );
  return out.map((data) => `data: ${data}\n\n`).concat("data: [DONE]\n\n");
}

function anthropicChunks(step: Step, model: string): string[] {
  const usage = step.usage ?? { input: 10, output: 5 };
  const event = (type: string, data: object) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  const out = [
    event("message_start", {
      message: {
        id: "msg_test",
        type: "message",
        role: "assistant",
        content: [],
        model,
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: usage.input,
          output_tokens: 1,
          cache_read_input_tokens: 0,
          cache_creation_input_tokens: 0,
        },
      },
    }),
  ];
  let index = 0;
  if (step.thinking) {
    out.push(event("content_block_start", { index, content_block: { type: "thinking", thinking: "" } }));
    for (const p of pieces(step.thinking))
      out.push(event("content_block_delta", { index, delta: { type: "thinking_delta", thinking: p } }));
    out.push(event("content_block_delta", { index, delta: { type: "signature_delta", signature: "sig-test" } }));
    out.push(event("content_block_stop", { index }));
    index++;
  }
  if (step.text) {
    out.push(event("content_block_start", { index, content_block: { type: "text", text: "" } }));
    for (const p of pieces(step.text))
      out.push(event("content_block_delta", { index, delta: { type: "text_delta", text: p } }));
    out.push(event("content_block_stop", { index }));
    index++;
  }
  for (const call of step.toolCalls ?? []) {
    out.push(
      event("content_block_start", {
        index,
        content_block: { type: "tool_use", id: call.id, name: call.name, input: {} },
      }),
    );
    for (const p of pieces(JSON.stringify(call.args)))
      out.push(event("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: p } }));
    out.push(event("content_block_stop", { index }));
    index++;
  }
  out.push(
    event("message_delta", {
      delta: { stop_reason: step.toolCalls?.length ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: usage.output },
    }),
  );
  out.push(event("message_stop", {}));
  return out;
}

function errorBody(path: string, status: number, message: string): string {
  if (path.endsWith("/messages")) {
    const type =
      status === 529
        ? "overloaded_error"
        : status === 429
          ? "rate_limit_error"
          : status === 401
            ? "authentication_error"
            : status >= 500
              ? "api_error"
              : "invalid_request_error";
    return JSON.stringify({ type: "error", error: { type, message } });
  }
  return JSON.stringify({
    error: {
      message,
      type: status === 429 ? "rate_limit_exceeded" : status >= 500 ? "server_error" : "invalid_request_error",
      code: null,
    },
  });
}

/** An error inside an SSE stream, in the request's wire format. */
function streamErrorEvent(path: string, fault: Extract<Fault, { kind: "streamError" }>): string {
  if (path.endsWith("/messages")) {
    const body = fault.body ?? { type: "error", error: { type: fault.type, message: fault.message } };
    return `event: error\ndata: ${JSON.stringify(body)}\n\n`;
  }
  const body = fault.body ?? {
    error: { message: fault.message, type: fault.type, param: null, code: fault.code ?? null },
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

export class ProviderServer {
  readonly requests: RecordedRequest[] = [];
  /** Requests being answered now (from arrival until the response is closed), and the most there ever were. */
  inFlight = 0;
  maxInFlight = 0;
  /** Answers each request instead of the script when set (e.g. by the time it arrives). */
  responder?: (request: RecordedRequest, index: number) => Step | undefined;
  private steps: Step[] = [];
  private server: Server;
  private sockets = new Set<import("node:net").Socket>();
  port = 0;

  constructor() {
    this.server = createServer((req, res) => void this.handle(req, res));
    this.server.on("connection", (socket) => {
      this.sockets.add(socket);
      socket.on("close", () => this.sockets.delete(socket));
    });
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Replaces the script; each request takes the next step. */
  script(steps: Step[]): void {
    this.steps = [...steps];
    this.requests.length = 0;
    this.responder = undefined;
    this.maxInFlight = this.inFlight;
  }

  openAIModel(overrides: Partial<Model<Api>> = {}): Model<Api> {
    return {
      id: "gpt-test",
      name: "GPT test",
      api: "openai-completions",
      provider: "openai",
      baseUrl: `http://127.0.0.1:${this.port}/v1`,
      reasoning: false,
      input: ["text"],
      cost: { input: 1, output: 2, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128000,
      maxTokens: 4096,
      ...overrides,
    };
  }

  anthropicModel(overrides: Partial<Model<Api>> = {}): Model<Api> {
    return {
      id: "claude-test",
      name: "Claude test",
      api: "anthropic-messages",
      provider: "anthropic",
      baseUrl: `http://127.0.0.1:${this.port}`,
      reasoning: true,
      input: ["text"],
      cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 200000,
      maxTokens: 4096,
      ...overrides,
    };
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let raw = "";
    for await (const chunk of req) raw += chunk;
    const path = req.url ?? "";
    const recorded: RecordedRequest = {
      path,
      headers: req.headers,
      body: raw ? JSON.parse(raw) : undefined,
      at: Date.now(),
    };
    this.requests.push(recorded);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on("close", () => this.inFlight--);
    const step = this.responder ? this.responder(recorded, this.requests.length - 1) : this.steps.shift();
    if (step?.delayMs) await new Promise((r) => setTimeout(r, step.delayMs));
    if (step?.until) await step.until.catch(() => {});
    recorded.status = step?.fault?.kind === "status" ? step.fault.status : step ? 200 : 500;
    if (!step) {
      res
        .writeHead(500, { "content-type": "application/json" })
        .end(errorBody(path, 500, "test server: no scripted step left"));
      return;
    }
    const fault = step.fault;
    if (fault?.kind === "status") {
      const body =
        fault.body !== undefined
          ? JSON.stringify(fault.body)
          : errorBody(path, fault.status, fault.message ?? `scripted ${fault.status}`);
      res.writeHead(fault.status, { "content-type": "application/json", ...fault.headers }).end(body);
      return;
    }
    const model = String((JSON.parse(raw || "{}") as { model?: string }).model ?? "test");
    const chunks = path.endsWith("/messages") ? anthropicChunks(step, model) : openAIChunks(step, model);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    for (let i = 0; i < chunks.length; i++) {
      if (fault && fault.afterChunks === i) {
        if (fault.kind === "reset") {
          req.socket.destroy();
          return;
        }
        if (fault.kind === "stall") {
          await new Promise((r) => setTimeout(r, fault.ms));
          if (req.socket.destroyed) return;
        }
        if (fault.kind === "streamError") {
          res.write(streamErrorEvent(path, fault));
          res.end();
          return;
        }
        if (fault.kind === "malformed") {
          res.write(
            path.endsWith("/messages")
              ? `event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0,,}\n\n`
              : `data: {"choices": [,,]}\n\n`,
          );
          res.end();
          return;
        }
      }
      res.write(chunks[i]);
      await new Promise((r) => setImmediate(r));
    }
    res.end();
  }
}
