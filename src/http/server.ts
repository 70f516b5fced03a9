/**
 * The run HTTP API (Fastify): start runs, follow them as Server-Sent Events
 * (with Last-Event-ID resume), steer, approve, deny, cancel, read their
 * state, and a run console page. Bound to loopback by default; bound anywhere
 * else it refuses to start without a bearer token, and then every request
 * must carry it (`Authorization: Bearer`, or `?token=` for EventSource).
 */
import { timingSafeEqual } from "node:crypto";
import type { Client } from "@temporalio/client";
import { WorkflowNotFoundError } from "@temporalio/common";
import { Type, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import Fastify, { type FastifyInstance, type FastifyReply } from "fastify";
import {
  getAgentRun,
  InvalidRunInputError,
  RunFinishedError,
  RunUpdateRejectedError,
  startAgentRun,
  type StartAgentRunOptions,
} from "../client.js";
import type { EventTap } from "../events/tap.js";
import { UserMessageSchema } from "../workflows/message-schema.js";
import { validateUserInput } from "../workflows/input.js";
import { consolePage } from "./console-page.js";
import { streamRunEvents } from "./sse.js";

export interface RunServerOptions {
  /** Temporal client the API acts with. */
  client: Client;
  /** The worker's event tap: live events with token deltas. Without one, events are rebuilt from transcripts. */
  tap?: EventTap;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8787; 0 = any free port. */
  port?: number;
  /** Bearer token; required when host is not loopback. Default: env JAI_HTTP_TOKEN. */
  token?: string;
  /** Task queue for POST /runs without one. */
  taskQueue?: string;
  /** Base URL of the Temporal UI, for links from the console. */
  temporalUiUrl?: string;
  /** Temporal namespace (for UI links); default "default". */
  namespace?: string;
}

export interface RunServer {
  /** e.g. http://127.0.0.1:8787 */
  readonly url: string;
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);

const Message = Type.Union([Type.String({ minLength: 1 }), UserMessageSchema]);
const MessageBody = Type.Object({ message: Message });
const ToolCallBody = Type.Object({ toolCallId: Type.String({ minLength: 1 }) });
const DenyBody = Type.Object({ toolCallId: Type.String({ minLength: 1 }), reason: Type.Optional(Type.String()) });
const StartBody = Type.Object(
  {
    model: Type.Unknown(),
    prompt: Type.Unknown(),
    taskQueue: Type.Optional(Type.String()),
    workflowId: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function sendError(reply: FastifyReply, err: unknown) {
  if (err instanceof InvalidRunInputError) return reply.code(400).send({ error: err.message });
  if (err instanceof RunUpdateRejectedError)
    return reply.code(409).send({ error: err.message, update: err.update, reason: err.reason });
  if (err instanceof RunFinishedError) return reply.code(409).send({ error: err.message, outcome: err.outcome });
  if (err instanceof WorkflowNotFoundError) return reply.code(404).send({ error: `no run ${err.workflowId}` });
  throw err;
}

export async function startRunServer(options: RunServerOptions): Promise<RunServer> {
  const host = options.host ?? "127.0.0.1";
  const token = options.token ?? process.env.JAI_HTTP_TOKEN;
  if (!LOOPBACK.has(host) && !token)
    throw new Error(`refusing to serve runs on ${host} without a bearer token: set JAI_HTTP_TOKEN (or bind 127.0.0.1)`);
  const { client, tap } = options;
  const app = Fastify({ logger: false, forceCloseConnections: true });
  // Bodies are checked with the TypeBox schemas the workflow itself uses.
  app.setValidatorCompiler(({ schema }) => (data) => {
    if (Value.Check(schema as TSchema, data)) return { value: data };
    const first = Value.Errors(schema as TSchema, data).First();
    return { error: new Error(`"body${first?.path.replace(/\//g, ".") ?? ""}": ${first?.message ?? "invalid"}`) };
  });
  app.setErrorHandler((err: { statusCode?: number; validation?: unknown; message: string }, _req, reply) => {
    if (err.validation || err.statusCode === 400) return reply.code(400).send({ error: err.message });
    return reply.code(err.statusCode && err.statusCode >= 400 ? err.statusCode : 500).send({ error: err.message });
  });
  if (token) {
    app.addHook("onRequest", async (req, reply) => {
      if (req.url === "/" || /^\/runs\/[^/]+\/console$/.test(req.url.split("?")[0])) return; // the page holds no data; its requests carry the token
      const header = req.headers.authorization?.replace(/^Bearer\s+/i, "");
      const query = (req.query as { token?: string } | undefined)?.token;
      const given = header ?? query;
      if (!given || !safeEqual(given, token)) return reply.code(401).send({ error: "missing or wrong bearer token" });
    });
  }
  const run = (id: string) => getAgentRun(client, id);
  const ui = options.temporalUiUrl
    ? `${options.temporalUiUrl.replace(/\/$/, "")}/namespaces/${options.namespace ?? "default"}/workflows`
    : "";

  app.get("/", async (_req, reply) => reply.type("text/html").send(consolePage({ temporalUi: ui })));
  app.get<{ Params: { id: string } }>("/runs/:id/console", async (_req, reply) =>
    reply.type("text/html").send(consolePage({ temporalUi: ui })),
  );

  app.post<{ Body: StartAgentRunOptions }>("/runs", { schema: { body: StartBody } }, async (req, reply) => {
    try {
      const handle = await startAgentRun(client, { taskQueue: options.taskQueue, ...req.body });
      return reply.code(201).send({ workflowId: handle.workflowId });
    } catch (err) {
      return sendError(reply, err);
    }
  });
  app.get<{ Params: { id: string } }>("/runs/:id", async (req, reply) => {
    try {
      return await run(req.params.id).state();
    } catch (err) {
      return sendError(reply, err);
    }
  });
  app.get<{ Params: { id: string }; Querystring: { from?: string } }>("/runs/:id/events", async (req, reply) => {
    const from = (req.headers["last-event-id"] as string | undefined) ?? req.query.from;
    try {
      await run(req.params.id).workflow.describe();
    } catch (err) {
      return sendError(reply, err);
    }
    reply.hijack();
    await streamRunEvents(reply.raw, client, tap, req.params.id, from).catch(() => reply.raw.destroy());
  });

  const messageRoute = (path: string, send: (id: string, message: string | object) => Promise<unknown>) =>
    app.post<{ Params: { id: string }; Body: { message: string } }>(
      `/runs/:id/${path}`,
      { schema: { body: MessageBody } },
      async (req, reply) => {
        const problem = validateUserInput(req.body.message);
        if (problem) return reply.code(400).send({ error: `Invalid message: ${problem}` });
        try {
          return (await send(req.params.id, req.body.message)) ?? { ok: true };
        } catch (err) {
          return sendError(reply, err);
        }
      },
    );
  messageRoute("steer", (id, m) => run(id).steer(m as string));
  messageRoute("follow-up", (id, m) => run(id).followUp(m as string));
  messageRoute("prompt", (id, m) => run(id).prompt(m as string));
  app.post<{ Params: { id: string }; Body: { toolCallId: string } }>(
    "/runs/:id/approve",
    { schema: { body: ToolCallBody } },
    async (req, reply) => {
      try {
        await run(req.params.id).approve(req.body.toolCallId);
        return { ok: true };
      } catch (err) {
        return sendError(reply, err);
      }
    },
  );
  app.post<{ Params: { id: string }; Body: { toolCallId: string; reason?: string } }>(
    "/runs/:id/deny",
    { schema: { body: DenyBody } },
    async (req, reply) => {
      try {
        await run(req.params.id).deny(req.body.toolCallId, req.body.reason);
        return { ok: true };
      } catch (err) {
        return sendError(reply, err);
      }
    },
  );
  app.post<{ Params: { id: string } }>("/runs/:id/cancel", async (req, reply) => {
    try {
      await run(req.params.id).cancel();
      return { ok: true };
    } catch (err) {
      return sendError(reply, err);
    }
  });

  await app.listen({ host, port: options.port ?? 8787 });
  const address = app.server.address() as { port: number };
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${address.port}`;
  return { url, app, close: () => app.close() };
}
