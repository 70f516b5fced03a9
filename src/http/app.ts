/**
 * The one HTTP app every server of the project is built on (the run API and console, the codec server, health and
 * metrics): a Fastify instance with one guard in front of every route. What the guard refuses, in order
 * (docs/design.md §3):
 * - a "#" in the request path (400): browsers never send one; it is someone probing how the path is cut;
 * - a `Host` the server does not answer to (403, DNS rebinding): `hosts` says which;
 * - a peer not on loopback when `loopbackPeers` (403): a server that has no token to ask for;
 * - a request another site's page sent (403): with `origins: "same-origin"` a `Sec-Fetch-Site` other than
 *   same-origin/none or an `Origin` not its own; with a list, an `Origin` not on it (CORS headers for those on it);
 * - a token in the query string (400): proxies log URLs;
 * - a state-changing request whose body is not `application/json` (415), so a form or a `no-cors` fetch cannot
 *   send one without a CORS preflight;
 * - an `Authorization` the `bearer` check refuses (401), compared in constant time.
 * Pages (`open`) skip the origin and bearer checks: they hold no data, their requests carry the token.
 */
import { randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { hostOfHeader, hostPort, isLoopbackHost, servedHosts } from "../node/addresses.js";
import { httpUrl } from "../shared/urls.js";

/** Decides whether a request may pass: its Authorization header as sent, and the request. */
export type BearerCheck = (authorization: string | undefined, req: FastifyRequest) => boolean | Promise<boolean>;

export interface HttpGuard {
  /**
   * The `Host` names it answers to: "served" (the loopback names and the bound address with the server's port, and
   * `allowedHosts`), "loopback" (loopback names, any port: a handler embedded in a server of someone else's), "any".
   */
  hosts: "served" | "loopback" | "any";
  /** With hosts "served": more names ("name": any port, "name:port"); "*": any Host. */
  allowedHosts?: readonly string[];
  /** Refuse peers that are not on loopback (a server that has no token to ask for). */
  loopbackPeers?: boolean;
  /**
   * Which browser pages may call: "same-origin" (the server's own pages only), or these origins (`scheme://host[:port]`,
   * "*" any), answered with CORS headers and preflights (`corsMethods`, `corsHeaders`).
   */
  origins: "same-origin" | readonly string[];
  corsMethods?: string;
  corsHeaders?: string;
  /** The bearer check (absent: none). */
  bearer?: BearerCheck;
  /**
   * The realm a 401 names in `WWW-Authenticate` (absent: no such header; the Temporal UI answers one from its
   * codec server by asking again, once a second, for as long as the page is open).
   */
  realm?: string;
  /**
   * Answers carry `Cache-Control: no-store` (default true). The codec server's do not: the Temporal UI, given one,
   * asks the same payloads again about once a second for as long as the page is open.
   */
  noStore?: boolean;
  /** Routes any navigation may load (pages and their files), by the route the router matched. */
  open?: (route: string) => boolean;
}

/** A bearer check for `Authorization: Bearer <token>` with any of `tokens`, compared in constant time. */
export function bearerTokens(tokens: readonly string[]): BearerCheck {
  const wanted = tokens.filter(Boolean).map((t) => Buffer.from(t));
  if (wanted.length === 0) throw new Error("bearerTokens needs at least one token");
  return (authorization) => {
    const given = /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1]?.trim();
    if (!given) return false;
    const bytes = Buffer.from(given);
    return wanted.some((w) => w.length === bytes.length && timingSafeEqual(w, bytes));
  };
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** Why a request comes from another site's page (same-origin mode), if it does. */
function foreignOrigin(req: FastifyRequest, served: Set<string> | undefined): string | undefined {
  const site = req.headers["sec-fetch-site"];
  if (site !== undefined && site !== "same-origin" && site !== "none")
    return `Sec-Fetch-Site: ${String(site)} (the request came from another site's page)`;
  const origin = req.headers.origin;
  if (origin === undefined) return undefined;
  const own = httpUrl(origin)?.host.toLowerCase();
  if (own && (served ? served.has(own) : own === req.headers.host?.toLowerCase())) return undefined;
  return `Origin ${origin} is not this server's`;
}

export interface HttpApp {
  readonly app: FastifyInstance;
  /** Listens on host:port (0: any free port); the `Host` names it serves are known from then on. */
  listen(host: string, port: number): Promise<{ url: string; port: number }>;
  /** The app as a plain request handler, for a server of someone else's (`hosts` should then be "loopback" or "any"). */
  handler(): (req: IncomingMessage, res: ServerResponse) => void;
}

/** A Fastify app behind the guard; JSON bodies only (an empty one reads as {}). */
export function createHttpApp(
  guard: HttpGuard,
  options: {
    bodyLimit?: number;
    /** Answers the routes' own typed errors (a reply), or leaves an error to the app's answer (undefined). */
    errors?: (err: unknown, reply: FastifyReply) => FastifyReply | undefined;
    /** Where an unexpected error's message and stack go (default: stderr); its answer carries only a reference. */
    log?: (line: string) => void;
  } = {},
): HttpApp {
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const app = Fastify({
    logger: false,
    forceCloseConnections: true,
    ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}),
    serverFactory: (h) => {
      handle = h;
      return createServer(h);
    },
  });
  const json = app.getDefaultJsonParser("error", "error");
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req, body, done) =>
    (body as string).trim() === "" ? done(null, {}) : json(req, body as string, done),
  );
  app.setErrorHandler((err: { statusCode?: number; validation?: unknown; message: string }, req, reply) => {
    if (options.errors?.(err, reply)) return reply;
    // A bad request, or another 4xx a route meant: the caller's to read.
    const status = err.validation ? 400 : err.statusCode;
    if (status && status >= 400 && status < 500) return reply.code(status).send({ error: err.message });
    // An unexpected error's message may name files, hosts or another run's data: the operator reads it in the log,
    // the caller gets a reference to it.
    const ref = randomUUID().slice(0, 8);
    log(
      `jai-agent http: error ${ref} answering ${req.method} ${req.url.split("?")[0]}: ${(err as Error).stack ?? err.message}`,
    );
    return reply
      .code(err.statusCode && err.statusCode > 500 ? err.statusCode : 500)
      .send({ error: `internal error (${ref}; the server's log has it)` });
  });
  const anyOrigin = guard.origins !== "same-origin" && guard.origins.includes("*");
  // The Host names it answers to, known once it listens (the port may be 0 until then); undefined: any.
  let served: Set<string> | undefined = guard.hosts === "served" ? new Set() : undefined;
  app.addHook("onRequest", async (req, reply) => {
    reply.header("x-content-type-options", "nosniff");
    // Not on a preflight: its answer is what the browser may keep (access-control-max-age).
    if (req.method !== "OPTIONS" && guard.noStore !== false) reply.header("cache-control", "no-store");
    if (req.raw.url?.includes("#")) return reply.code(400).send({ error: 'a "#" in the request path is not accepted' });
    const named = req.headers.host?.toLowerCase() ?? "";
    if (
      (guard.hosts === "served" && served && !served.has(named)) ||
      (guard.hosts === "loopback" && !isLoopbackHost(hostOfHeader(named)))
    )
      return reply.code(403).send({
        error:
          guard.hosts === "loopback"
            ? `refused Host "${named}": without tokens this server answers loopback names only (DNS rebinding guard)`
            : `refused Host "${named}": this server answers only to loopback names and its own address with its port, and to its allowed hosts (DNS rebinding guard)`,
      });
    if (guard.loopbackPeers && !isLoopbackHost(req.socket.remoteAddress ?? ""))
      return reply.code(403).send({ error: "without tokens this server serves loopback peers only" });
    if (req.method === "GET" && guard.open?.(req.routeOptions.url ?? "")) return;
    if (guard.origins === "same-origin") {
      const foreign = foreignOrigin(req, served);
      if (foreign) return reply.code(403).send({ error: `cross-origin request refused: ${foreign}` });
    } else if (req.headers.origin !== undefined) {
      // A browser's cross-origin call (a CLI or curl sends no Origin, and needs no CORS answer).
      const origin = req.headers.origin;
      if (!anyOrigin && !guard.origins.includes(origin))
        return reply.code(403).send({
          error: `refused Origin "${origin}": not one this server serves (allowed: ${guard.origins.join(", ")})`,
        });
      reply
        .header("access-control-allow-origin", origin)
        .header("vary", "Origin")
        .header("access-control-allow-credentials", "true")
        .header("access-control-allow-methods", guard.corsMethods ?? "GET, POST, OPTIONS")
        .header("access-control-allow-headers", guard.corsHeaders ?? "Authorization, Content-Type")
        .header("access-control-max-age", "600");
      // Preflights carry no credentials by design: answered before the bearer check.
      if (req.method === "OPTIONS") return reply.code(204).send();
    }
    if (req.query && typeof req.query === "object" && "token" in req.query)
      return reply.code(400).send({
        error: "a token in the query string is not accepted (proxies log URLs): send Authorization: Bearer <token>",
      });
    if (!SAFE_METHODS.has(req.method)) {
      const type = (req.headers["content-type"] ?? "").split(";")[0].trim().toLowerCase();
      if (type !== "application/json")
        return reply
          .code(415)
          .send({ error: `${req.method} needs Content-Type: application/json, got "${type || "none"}"` });
    }
    if (guard.bearer && !(await guard.bearer(req.headers.authorization, req))) {
      if (guard.realm) reply.header("www-authenticate", `Bearer realm="${guard.realm}"`);
      return reply.code(401).send({ error: "missing or wrong bearer token (Authorization: Bearer <token>)" });
    }
  });
  return {
    app,
    async listen(host, port) {
      await app.listen({ host, port });
      const bound = (app.server.address() as { port: number }).port;
      if (guard.hosts === "served") served = servedHosts(host, bound, guard.allowedHosts ?? []);
      return { url: `http://${hostPort(host, bound)}`, port: bound };
    },
    handler() {
      const ready = app.ready();
      return (req, res) =>
        void ready.then(
          () => handle!(req, res),
          (err: unknown) => {
            log(`jai-agent http: not ready: ${String(err)}`);
            res.writeHead(500).end("internal error (the server's log has it)");
          },
        );
    },
  };
}
