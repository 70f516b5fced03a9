/**
 * The run HTTP API (Fastify): start runs, follow them as Server-Sent Events
 * (with Last-Event-ID resume), steer, approve, deny, cancel, read their
 * state, list them, start configured agents by name, and the console (docs/console.md) at `/`.
 *
 * What it refuses (docs/design.md §3: a browser page may use the console and API
 * of its own origin, with a token, never drive the server from another origin
 * or host name):
 * - a `Host` it does not serve under (DNS rebinding): only loopback names with
 *   its port, the bound address, and `allowedHosts` (403);
 * - a request another site's page sent: `Sec-Fetch-Site` cross-site/same-site,
 *   or an `Origin` not its own (403);
 * - a state-changing request whose body is not `application/json` (415), so a
 *   foreign page cannot send one without a CORS preflight, which it never passes;
 * - any API request without the bearer token in `Authorization: Bearer` (401);
 *   a token in the query string is refused outright (400). Without a configured
 *   token it mints one at start: `RunServer.consoleUrl` carries it in the URL
 *   fragment, which never reaches a server or its logs;
 * - more event streams than `maxEventStreams` (429);
 * - a workflow id that is not an agent run (404).
 * Bound anywhere but loopback it needs a configured token.
 */
import { randomBytes } from "node:crypto";
import type { Client } from "@temporalio/client";
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from "@temporalio/common";
import { Type, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { bearerTokens, createHttpApp } from "./app.js";
import {
  getAgentRun,
  InvalidRunInputError,
  RunFinishedError,
  RunUpdateRejectedError,
  startAgentRun,
  type AgentRunHandle,
  type StartAgentRunOptions,
} from "../client/client.js";
import type { EventTap } from "../worker/events/tap.js";
import { AGENT_RUN_WORKFLOW } from "../shared/definitions.js";
import { UserMessageSchema } from "../shared/message-schema.js";
import { validateUserInput } from "../shared/run-input.js";
import { approvalPolicyProblem } from "../shared/approval-rules.js";
import { AgentRequestError, agentRunOptions, describeAgent, type AgentDefinition } from "../shared/agents.js";
import { TenantLimitError, type TenantsConfig } from "../shared/tenants.js";
import { CONSOLE_CSP, consoleFiles } from "./console/assets.js";
import { listRunPage, RUN_FILTERS } from "./run-list.js";
import type { RunReader } from "../client/events/subscribe.js";
import { streamRunEvents } from "./sse.js";
import { timelineOf } from "../client/timeline.js";

export interface RunServerOptions {
  /** Temporal client the API acts with. */
  client: Client;
  /** The worker's event tap: live events with token deltas. Without one, events are rebuilt from transcripts. */
  tap?: EventTap;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 8787; 0 = any free port. */
  port?: number;
  /**
   * Bearer token every API request must carry (`Authorization: Bearer <token>`). Default: env JAI_HTTP_TOKEN;
   * when neither is set, a random token is minted at start (see `RunServer.token` and `consoleUrl`); required
   * when host is not loopback. `false` (or JAI_HTTP_TOKEN=off): no token at all, on loopback only (tests, dev);
   * the Host, origin and content-type checks still apply.
   */
  token?: string | false;
  /**
   * Host names requests may name in `Host` besides the loopback names and the bound address (each with the
   * server's port): "name" (any port) or "name:port", e.g. the name of a reverse proxy that keeps `Host`.
   * "*" accepts any Host (the other checks and the token still apply). Default: env JAI_HTTP_ALLOWED_HOSTS, comma-separated.
   */
  allowedHosts?: string[];
  /** Event streams (SSE) open at once: per run (default 16) and in all (default 128); over them: 429. */
  maxEventStreams?: { perRun?: number; total?: number };
  /** Task queue for POST /runs without one. */
  taskQueue?: string;
  /** Base URL of the Temporal UI, for links from the console. */
  temporalUiUrl?: string;
  /** Temporal namespace (for UI links); default "default". */
  namespace?: string;
  /** Named agents (the config module's `agents`): `POST /runs { agent, prompt }` and the console's "New run". */
  agents?: AgentDefinition[];
  /**
   * The models the worker serves by name ("provider/id", e.g. the offline demo model), which the console's "New
   * run" offers when there are no `agents`: then it starts a run from a model and a prompt, through the raw
   * `POST /runs` the API already takes without agents (docs/console.md). Names only; nothing else is exposed.
   */
  models?: string[];
  /**
   * With `agents`, whether `POST /runs` also takes raw run input (any model the worker serves, any tools, any
   * queue): without it a token holder starts only the configured agents, within what each allows.
   * Default: env JAI_HTTP_RAW_RUNS=on; without agents, raw input is the API and always taken.
   */
  rawRuns?: boolean;
  /**
   * Per-tenant limits of `POST /runs { tenant }` (the config module's `tenants`, docs/tenants.md): over
   * `maxConcurrentRuns` a start is refused with 429. A caller's body cannot replace them.
   */
  tenants?: TenantsConfig;
}

export interface RunServer {
  /** e.g. http://127.0.0.1:8787 */
  readonly url: string;
  /** The bearer token requests need (configured or minted); undefined with `token: false`. */
  readonly token: string | undefined;
  /** True when the token was minted here (no JAI_HTTP_TOKEN / option): print `consoleUrl` for the person. */
  readonly tokenMinted: boolean;
  /** The console's URL; with a minted token it carries it in the fragment (`/#token=…`), never in the query. */
  readonly consoleUrl: string;
  readonly app: FastifyInstance;
  close(): Promise<void>;
}

const LOOPBACK = new Set(["127.0.0.1", "::1", "localhost"]);
export const DEFAULT_EVENT_STREAMS = { perRun: 16, total: 128 };

const Message = Type.Union([Type.String({ minLength: 1 }), UserMessageSchema]);
const MessageBody = Type.Object({ message: Message });
const ToolCallBody = Type.Object({
  toolCallId: Type.String({ minLength: 1 }),
  remember: Type.Optional(Type.Boolean()),
});
const ToolResultBody = Type.Object({
  toolCallId: Type.String({ minLength: 1 }),
  result: Type.Unknown(),
  isError: Type.Optional(Type.Boolean()),
});
const PolicyBody = Type.Object({ policy: Type.Unknown() });
const DenyBody = Type.Object({ toolCallId: Type.String({ minLength: 1 }), reason: Type.Optional(Type.String()) });
const AgentStartBody = Type.Object(
  {
    agent: Type.String({ minLength: 1 }),
    prompt: Type.String({ minLength: 1, maxLength: 1_000_000 }),
    model: Type.Optional(Type.String()),
    systemPrompt: Type.Optional(Type.String()),
    tools: Type.Optional(Type.Array(Type.String())),
    workflowId: Type.Optional(Type.String({ minLength: 1 })),
    tenant: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const ListQuery = Type.Object({
  status: Type.Optional(Type.Union([Type.Literal(""), ...RUN_FILTERS.map((f) => Type.Literal(f))])),
  model: Type.Optional(Type.String({ maxLength: 200 })),
  tenant: Type.Optional(Type.String({ pattern: "^[A-Za-z0-9._-]{1,64}$" })),
  text: Type.Optional(Type.String({ maxLength: 200 })),
  pageSize: Type.Optional(Type.String({ pattern: "^[0-9]{1,3}$" })),
  pageToken: Type.Optional(Type.String({ maxLength: 4096, pattern: "^[A-Za-z0-9_-]*$" })),
});
const StartBody = Type.Object(
  {
    model: Type.Unknown(),
    prompt: Type.Unknown(),
    taskQueue: Type.Optional(Type.String()),
    workflowId: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** A workflow id that names a workflow of another type (anything else in the namespace). */
class NotAnAgentRunError extends Error {
  constructor(readonly workflowId: string) {
    super(`no agent run ${workflowId}`);
  }
}

/** The client's typed errors as the answers they mean; undefined for anything else (the app's handler answers it). */
function sendError(reply: FastifyReply, err: unknown) {
  if (err instanceof InvalidRunInputError || err instanceof AgentRequestError)
    return reply.code(400).send({ error: err.message });
  if (err instanceof TenantLimitError)
    return reply
      .code(429)
      .send({ error: err.message, tenant: err.tenant, limit: err.limit, max: err.max, current: err.current });
  if (err instanceof RunUpdateRejectedError)
    return reply.code(409).send({ error: err.message, update: err.update, reason: err.reason });
  if (err instanceof RunFinishedError) return reply.code(409).send({ error: err.message, outcome: err.outcome });
  if (err instanceof WorkflowNotFoundError) return reply.code(404).send({ error: `no run ${err.workflowId}` });
  if (err instanceof NotAnAgentRunError) return reply.code(404).send({ error: err.message });
  if (err instanceof WorkflowExecutionAlreadyStartedError)
    return reply.code(409).send({ error: `a workflow ${err.workflowId} already exists` });
  return undefined;
}

/** Why `data` does not fit `schema`, in the words the 400 answers use; undefined when it fits. */
function schemaProblem(schema: TSchema, data: unknown, where = "body"): string | undefined {
  if (Value.Check(schema, data)) return undefined;
  const first = Value.Errors(schema, data).First();
  return `"${where}${first?.path.replace(/\//g, ".") ?? ""}": ${first?.message ?? "invalid"}`;
}

export async function startRunServer(options: RunServerOptions): Promise<RunServer> {
  const host = options.host ?? "127.0.0.1";
  const configured = options.token ?? process.env.JAI_HTTP_TOKEN;
  const disabled = configured === false || configured === "off";
  if (!LOOPBACK.has(host) && (disabled || !configured))
    throw new Error(`refusing to serve runs on ${host} without a bearer token: set JAI_HTTP_TOKEN (or bind 127.0.0.1)`);
  // The console's files (bundled now when run from the sources): a missing bundle fails the start, not a page.
  const consoleApp = consoleFiles();
  /**
   * Page routes and the console's files: they hold no data (their requests carry the token), so any navigation may
   * load them. Named by the route the router matched, never by the raw URL: the router ends a path at "#" as at "?",
   * so "/runs/<id>#/console" reads as a page to a string test but is served by "/runs/:id".
   */
  const pageRoutes = new Set(["/", "/runs/:id/console", "/favicon.ico", ...consoleApp.assets.map((a) => a.path)]);
  const tokenMinted = !disabled && !configured;
  const token: string | undefined = disabled
    ? undefined
    : tokenMinted
      ? randomBytes(24).toString("base64url")
      : (configured as string);
  const allowed = options.allowedHosts ?? (process.env.JAI_HTTP_ALLOWED_HOSTS ?? "").split(",").filter(Boolean);
  const caps = { ...DEFAULT_EVENT_STREAMS, ...options.maxEventStreams };
  const { client, tap } = options;
  const http = createHttpApp(
    {
      hosts: "served",
      allowedHosts: allowed,
      origins: "same-origin",
      realm: "jai-agent",
      ...(token ? { bearer: bearerTokens([token]) } : {}),
      open: (route) => pageRoutes.has(route),
    },
    {
      // A route's typed failure (no such run, an update refused, a finished run, ...) answers with its status.
      errors: (err, reply) => sendError(reply, err),
    },
  );
  const { app } = http;
  // Bodies are checked with the TypeBox schemas the workflow itself uses.
  app.setValidatorCompiler(({ schema, httpPart }) => (data) => {
    const problem = schemaProblem(schema as TSchema, data, httpPart === "querystring" ? "query" : "body");
    return problem ? { error: new Error(problem) } : { value: data };
  });

  /** The run behind an id, once it is known to be an agent run (not another workflow of the namespace). */
  const agentRun = async (id: string): Promise<AgentRunHandle> => {
    const handle = getAgentRun(client, id);
    const { type } = await handle.workflow.describe();
    if (type !== AGENT_RUN_WORKFLOW) throw new NotAnAgentRunError(id);
    return handle;
  };
  const ui = options.temporalUiUrl
    ? `${options.temporalUiUrl.replace(/\/$/, "")}/namespaces/${options.namespace ?? "default"}/workflows`
    : "";
  const agents = options.agents ?? [];
  const rawRuns = options.rawRuns ?? process.env.JAI_HTTP_RAW_RUNS === "on";
  // The shell and its files: revalidated by ETag (the shell) or kept a year under their content hash (the files).
  const cached = (req: FastifyRequest, reply: FastifyReply, hash: string, immutable: boolean) => {
    reply
      .header("etag", `"${hash}"`)
      .header("cache-control", immutable ? "public, max-age=31536000, immutable" : "no-cache");
    return req.headers["if-none-match"] === `"${hash}"`;
  };
  const page = (req: FastifyRequest, reply: FastifyReply) => {
    reply
      .type("text/html; charset=utf-8")
      .header("content-security-policy", CONSOLE_CSP)
      .header("x-frame-options", "DENY")
      .header("referrer-policy", "no-referrer");
    return cached(req, reply, consoleApp.shellHash, false) ? reply.code(304).send() : reply.send(consoleApp.shell);
  };
  app.get("/", async (req, reply) => page(req, reply));
  // The icon a browser asks for by itself, without the token: none (not a 401 in its console).
  app.get("/favicon.ico", async (_req, reply) => reply.code(204).send());
  app.get<{ Params: { id: string } }>("/runs/:id/console", async (req, reply) => page(req, reply));
  for (const file of consoleApp.assets)
    app.get<{ Querystring: { v?: string } }>(file.path, async (req, reply) => {
      reply.type(file.type);
      return cached(req, reply, file.hash, req.query.v === file.hash) ? reply.code(304).send() : reply.send(file.body);
    });
  // What the console needs besides the API: where the Temporal UI is, and the agents it may start.
  // Without agents the API takes raw input (model and prompt), and so does the console's "New run": nothing the
  // API did not already allow. With agents, the console starts them only, whatever JAI_HTTP_RAW_RUNS says.
  app.get("/console/settings", async () => ({
    temporalUi: ui,
    namespace: options.namespace ?? "default",
    agents: agents.map(describeAgent),
    ...(agents.length === 0 ? { rawRuns: true, models: options.models ?? [] } : {}),
  }));
  app.get("/agents", async () => ({ agents: agents.map(describeAgent) }));

  app.get<{ Querystring: { status?: string; model?: string; text?: string; pageSize?: string; pageToken?: string } }>(
    "/runs",
    { schema: { querystring: ListQuery } },
    async (req, reply) => {
      const { pageSize, ...rest } = req.query;
      try {
        return await listRunPage(client, { ...rest, pageSize: pageSize === undefined ? undefined : Number(pageSize) });
      } catch (err) {
        // A stale or forged page token is the caller's mistake, not the server's.
        if (/page token|nextPageToken|invalid/i.test((err as Error).message))
          return reply.code(400).send({ error: (err as Error).message });
        // Visibility refusing the query: the caller's filter, and the store's words are not theirs to read.
        if (/INVALID_ARGUMENT|UNAVAILABLE|syntax|query/i.test((err as Error).message))
          return reply.code(400).send({ error: "the runs list could not be read with these filters" });
        throw err;
      }
    },
  );

  app.post<{ Body: Record<string, unknown> }>("/runs", async (req, reply) => {
    const body = req.body ?? {};
    // By agent name (the registry decides model, tools, session; the caller only what the agent allows), or raw input.
    const byAgent = typeof body === "object" && "agent" in body;
    if (!byAgent && agents.length > 0 && !rawRuns)
      return reply.code(403).send({
        error: `this server starts its configured agents only: POST /runs { "agent": "<name>", "prompt": "…" } (agents: ${agents.map((a) => a.name).join(", ")}; JAI_HTTP_RAW_RUNS=on also takes raw run input)`,
      });
    const problem = schemaProblem(byAgent ? AgentStartBody : StartBody, body);
    if (problem) return reply.code(400).send({ error: problem });
    const input = byAgent
      ? agentRunOptions(agents, body as unknown as Parameters<typeof agentRunOptions>[1])
      : (body as unknown as StartAgentRunOptions);
    // The server's tenant limits, whatever the body says (raw input is spread: a "tenants" in it is dropped).
    const handle = await startAgentRun(client, { taskQueue: options.taskQueue, ...input, tenants: options.tenants });
    return reply.code(201).send({ workflowId: handle.workflowId });
  });
  // Where the run's time went, per turn (client/timeline.ts): read from the newest run's history, no payload decoded.
  app.get<{ Params: { id: string } }>("/runs/:id/timeline", async (req) => {
    const run = await agentRun(req.params.id);
    return timelineOf(run.workflowId, (await run.workflow.fetchHistory()).events ?? []);
  });
  app.get<{ Params: { id: string } }>("/runs/:id", async (req) => {
    return await (await agentRun(req.params.id)).state();
  });

  const streams = new Map<string, number>();
  let streaming = 0;
  app.get<{ Params: { id: string }; Querystring: { from?: string } }>("/runs/:id/events", async (req, reply) => {
    const id = req.params.id;
    const from = (req.headers["last-event-id"] as string | undefined) ?? req.query.from;
    const handle = await agentRun(id);
    // Closed once its chain's newest run is (describe answers for it), as the live stream ends.
    const run: RunReader = {
      transcript: () => handle.transcript(),
      closed: async () => (await handle.workflow.describe()).status.name !== "RUNNING",
    };
    const ofRun = streams.get(id) ?? 0;
    if (ofRun >= caps.perRun || streaming >= caps.total)
      return reply
        .code(429)
        .header("retry-after", "5")
        .send({
          error:
            ofRun >= caps.perRun
              ? `too many event streams of run ${id} (${caps.perRun} open): close one first`
              : `too many event streams (${caps.total} open): close one first`,
        });
    streams.set(id, ofRun + 1);
    streaming++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      streaming--;
      const left = (streams.get(id) ?? 1) - 1;
      if (left > 0) streams.set(id, left);
      else streams.delete(id);
    };
    reply.raw.once("close", release);
    reply.hijack();
    try {
      await streamRunEvents(reply.raw, run, tap, id, from).catch(() => reply.raw.destroy());
    } finally {
      release();
    }
  });

  const messageRoute = (path: string, send: (run: AgentRunHandle, message: string | object) => Promise<unknown>) =>
    app.post<{ Params: { id: string }; Body: { message: string } }>(
      `/runs/:id/${path}`,
      { schema: { body: MessageBody } },
      async (req, reply) => {
        const problem = validateUserInput(req.body.message);
        if (problem) return reply.code(400).send({ error: `Invalid message: ${problem}` });
        return (await send(await agentRun(req.params.id), req.body.message)) ?? { ok: true };
      },
    );
  messageRoute("steer", (run, m) => run.steer(m as string));
  messageRoute("follow-up", (run, m) => run.followUp(m as string));
  messageRoute("prompt", (run, m) => run.prompt(m as string));
  app.post<{ Params: { id: string }; Body: { toolCallId: string; remember?: boolean } }>(
    "/runs/:id/approve",
    { schema: { body: ToolCallBody } },
    async (req) => {
      const remember = req.body.remember ? { remember: true } : undefined;
      await (await agentRun(req.params.id)).approve(req.body.toolCallId, remember);
      return { ok: true };
    },
  );
  app.post<{ Params: { id: string }; Body: { toolCallId: string; reason?: string } }>(
    "/runs/:id/deny",
    { schema: { body: DenyBody } },
    async (req) => {
      await (await agentRun(req.params.id)).deny(req.body.toolCallId, req.body.reason);
      return { ok: true };
    },
  );
  // A client tool's result (issue #41): 409 with the reason when the run refuses it (e.g. its result schema).
  app.post<{ Params: { id: string }; Body: { toolCallId: string; result: unknown; isError?: boolean } }>(
    "/runs/:id/tool-result",
    { schema: { body: ToolResultBody } },
    async (req) => {
      const { toolCallId, result, isError } = req.body;
      await (await agentRun(req.params.id)).submitToolResult(toolCallId, result, isError ? { isError } : undefined);
      return { ok: true };
    },
  );
  app.post<{ Params: { id: string }; Body: { policy: unknown } }>(
    "/runs/:id/policy",
    { schema: { body: PolicyBody } },
    async (req, reply) => {
      // A malformed policy is a bad request (400, naming the field); the run's refusals stay 409.
      const problem = approvalPolicyProblem(req.body.policy, "policy");
      if (problem) return reply.code(400).send({ error: `Invalid approval policy: ${problem}` });
      return { policy: await (await agentRun(req.params.id)).setApprovalPolicy(req.body.policy as never) };
    },
  );
  app.post<{ Params: { id: string } }>("/runs/:id/cancel", async (req) => {
    await (await agentRun(req.params.id)).cancel();
    return { ok: true };
  });

  const { url } = await http.listen(host, options.port ?? 8787);
  const consoleUrl = `${url}/${tokenMinted ? `#token=${token}` : ""}`;
  return { url, token, tokenMinted, consoleUrl, app, close: () => app.close() };
}
