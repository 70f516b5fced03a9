/**
 * Temporal's codec server protocol over the built-in codec, so the Temporal
 * UI (and `temporal --codec-endpoint`) show decrypted payloads to the people
 * allowed to see them: `POST /encode` and `POST /decode` take and return
 * `{ payloads: [{ metadata: { k: base64 }, data: base64 }] }`.
 *
 * The browser calls it directly, from the UI's page, so a page on any other
 * origin the same browser opens could call it too. What it refuses, in order:
 * - an `Origin` that is not one of the UI's (403, and no CORS headers): a
 *   browser names the page's origin on every cross-origin request and every
 *   POST, so a foreign page (or a DNS-rebound name) gets nothing;
 * - under `authorize: "loopback"` (no token, for the local dev flow, where
 *   the UI has no sign-in and so no token to forward): a `Host` that is not a
 *   loopback name (DNS rebinding) or a peer that is not on loopback (403);
 * - a body that is not `application/json` (415), so an HTML form or a
 *   `no-cors` fetch cannot reach a codec at all;
 * - an `Authorization` the authorizer does not accept (401).
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import type { ExternalStorage, Payload, PayloadCodec } from "@temporalio/common";
import { CodecKeyError } from "../node/codec/aes-gcm.js";
import { resolvePayloadClaims } from "../node/blobs/config.js";
import { BlobNotFoundError } from "../node/blobs/drivers.js";
import { isLoopbackHost } from "../node/addresses.js";
import { bearerTokens as bearerCheck, createHttpApp, type HttpApp } from "./app.js";
import { httpUrl } from "../shared/urls.js";

export { isLoopbackHost } from "../node/addresses.js";

/** Decides whether a request may see plaintext: the Authorization header as sent, and the X-Namespace header. */
export type CodecAuthorizer = (
  authorization: string | undefined,
  namespace: string | undefined,
) => boolean | Promise<boolean>;

export interface CodecServerOptions {
  /** Codecs, applied in order to encode and in reverse to decode (as a data converter does). */
  codecs: PayloadCodec[];
  /**
   * Origins allowed to call from a browser (the Temporal UI's, e.g. "http://localhost:8233"), as the browser
   * sends them (`scheme://host[:port]`, no path); "*" allows any. A request naming another origin gets 403.
   */
  origins: string[];
  /**
   * The authorization check; see `bearerTokens`. Required: pass `() => true` to knowingly serve everyone who
   * reaches the port. `"loopback"`: no token, for peers on loopback naming a loopback `Host`; `createCodecServer`
   * then refuses to listen anywhere but loopback (embedding `codecRequestHandler`, keep the server on loopback).
   */
  authorize: CodecAuthorizer | "loopback";
  /** Largest request body; default 64 MB. */
  maxBodyBytes?: number;
  /** The blob store (External Storage): `/decode` replaces each claim with the payload it stands for first. */
  externalStorage?: ExternalStorage;
}

/** An authorizer accepting `Authorization: Bearer <token>` for any of `tokens` (compared in constant time). */
export function bearerTokens(tokens: string[]): CodecAuthorizer {
  const check = bearerCheck(tokens);
  return (authorization) => check(authorization, undefined as never);
}

/** Codec server options that cannot be served safely or at all: names what is wrong and how to fix it. */
export class CodecServerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CodecServerConfigError";
  }
}

/** `origins` checked: each must be what a browser sends as `Origin` (else it could never match, silently). */
function checkOrigins(origins: string[], authorize: CodecServerOptions["authorize"]): void {
  for (const origin of origins) {
    if (origin === "*") {
      // Without a token, "*" would let any web page the user opens decrypt through the user's browser.
      if (authorize === "loopback")
        throw new CodecServerConfigError(
          'origin "*" needs an authorizer: without tokens any web page could decrypt through this codec server; name the Temporal UI\'s origin',
        );
      continue;
    }
    const parsed = httpUrl(origin);
    if (parsed?.origin !== origin)
      throw new CodecServerConfigError(
        `origin "${origin}" is not an origin as a browser sends it (http(s)://host[:port], no path or trailing slash)${parsed ? `: did you mean "${parsed.origin}"?` : ""}`,
      );
  }
}

interface JsonPayload {
  metadata?: Record<string, string>;
  data?: string;
}

const toPayload = (p: JsonPayload): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, "base64")])),
  data: Buffer.from(p.data ?? "", "base64"),
});
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString("base64"),
});

/** The codec routes on the HTTP app's guard (Origin list with CORS, loopback Host and peer without tokens, JSON). */
function codecApp(options: CodecServerOptions): HttpApp {
  checkOrigins(options.origins, options.authorize);
  const { authorize } = options;
  const tokenless = authorize === "loopback";
  const http = createHttpApp(
    {
      // No token: who may ask is decided by where the request comes from and whom it names.
      hosts: tokenless ? "loopback" : "any",
      loopbackPeers: tokenless,
      origins: options.origins,
      corsMethods: "POST, OPTIONS",
      corsHeaders: "Authorization, Content-Type, X-Namespace",
      noStore: false,
      ...(tokenless
        ? {}
        : {
            bearer: (authorization, req) => authorize(authorization, req.headers["x-namespace"] as string | undefined),
          }),
    },
    {
      bodyLimit: options.maxBodyBytes ?? 64 * 1024 * 1024,
      // A key or a blob the codec cannot find is the caller's to read; anything else is the app's 500.
      errors: (err, reply) => {
        if (err instanceof CodecKeyError)
          return reply.code(422).send({ error: err.message, keyId: err.keyId, reason: err.reason });
        if (err instanceof BlobNotFoundError) return reply.code(404).send({ error: err.message, code: err.code });
        return undefined;
      },
    },
  );
  const { app } = http;
  // POST <any prefix>/encode or /decode: the UI puts its endpoint's path before them.
  app.post("/*", async (req, reply) => {
    const route = req.url.split("?")[0].replace(/\/+$/, "");
    const op = route.endsWith("/encode") ? "encode" : route.endsWith("/decode") ? "decode" : undefined;
    if (!op) return reply.code(404).send({ error: "not found: POST /encode or /decode" });
    const body = req.body as { payloads?: JsonPayload[] } | undefined;
    if (!body || !Array.isArray(body.payloads))
      return reply.code(400).send({ error: 'bad request body: expected { "payloads": [...] }' });
    let payloads: Payload[];
    try {
      payloads = body.payloads.map(toPayload);
    } catch (err) {
      return reply.code(400).send({ error: `bad request body: ${(err as Error).message}` });
    }
    if (op === "encode") for (const codec of options.codecs) payloads = await codec.encode(payloads);
    else {
      if (options.externalStorage) payloads = await resolvePayloadClaims(payloads, options.externalStorage);
      for (const codec of [...options.codecs].reverse()) payloads = await codec.decode(payloads);
    }
    return { payloads: payloads.map(toJson) };
  });
  app.setNotFoundHandler((req, reply) =>
    reply.code(404).send({ error: `not found: POST /encode or /decode (got ${req.method} ${req.url.split("?")[0]})` }),
  );
  return http;
}

/** The request handler (for embedding in another server); see createCodecServer. */
export function codecRequestHandler(options: CodecServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  return codecApp(options).handler();
}

/**
 * An HTTP server speaking the codec server protocol; resolves once it listens (port 0: any free one; host default
 * 127.0.0.1). Rejects with a CodecServerConfigError for options it cannot serve safely: `authorize: "loopback"`
 * on a host that is not loopback, or origins that are not origins.
 */
export async function createCodecServer(
  options: CodecServerOptions & { port: number; host?: string },
): Promise<Server> {
  const host = options.host ?? "127.0.0.1";
  if (options.authorize === "loopback" && !isLoopbackHost(host))
    throw new CodecServerConfigError(
      `listening on ${host} needs tokens: without them the codec server decrypts only on loopback (127.0.0.1); set JAI_CODEC_SERVER_TOKENS (bearer tokens, see docs/encryption.md), or bind 127.0.0.1`,
    );
  const http = codecApp(options);
  await http.listen(host, options.port);
  return http.app.server;
}
