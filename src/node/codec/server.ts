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
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { isIPv4 } from "node:net";
import type { ExternalStorage, Payload, PayloadCodec } from "@temporalio/common";
import { CodecKeyError } from "./aes-gcm.js";
import { resolvePayloadClaims } from "../blobs/config.js";
import { BlobNotFoundError } from "../blobs/drivers.js";

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
  const wanted = tokens.filter(Boolean).map((t) => Buffer.from(t));
  if (wanted.length === 0) throw new Error("bearerTokens needs at least one token");
  return (authorization) => {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization ?? "");
    if (!match) return false;
    const given = Buffer.from(match[1]);
    return wanted.some((w) => w.length === given.length && timingSafeEqual(w, given));
  };
}

/** Codec server options that cannot be served safely or at all: names what is wrong and how to fix it. */
export class CodecServerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CodecServerConfigError";
  }
}

/** A loopback address or name: "localhost", 127.0.0.0/8, ::1 (also IPv4-mapped, and in brackets). */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .toLowerCase()
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/^::ffff:/, "");
  return h === "localhost" || h === "::1" || (isIPv4(h) && h.startsWith("127."));
}

/** The host of a `Host` header ("name:port", "[v6]:port" or a bare name). */
const hostOfHeader = (header: string) =>
  header.startsWith("[") ? header.slice(0, header.indexOf("]") + 1) : header.replace(/:\d*$/, "");

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
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      // Reported below.
    }
    if (!parsed || !/^https?:$/.test(parsed.protocol) || parsed.origin !== origin)
      throw new CodecServerConfigError(
        `origin "${origin}" is not an origin as a browser sends it (http(s)://host[:port], no path or trailing slash)${parsed && /^https?:$/.test(parsed.protocol) ? `: did you mean "${parsed.origin}"?` : ""}`,
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

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        reject(new HttpError(413, `request body over ${limit} bytes`));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

/** The request handler (for embedding in another server); see createCodecServer. */
export function codecRequestHandler(options: CodecServerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const limit = options.maxBodyBytes ?? 64 * 1024 * 1024;
  checkOrigins(options.origins, options.authorize);
  const anyOrigin = options.origins.includes("*");
  const { authorize } = options;
  const cors = (req: IncomingMessage, res: ServerResponse) => {
    const origin = req.headers.origin;
    if (origin === undefined) return; // not a browser's cross-origin call (temporal CLI, curl): no CORS to answer
    if (!anyOrigin && !options.origins.includes(origin))
      throw new HttpError(
        403,
        `refused Origin "${origin}": not the Temporal UI's (allowed: ${options.origins.join(", ")}; --origin / JAI_CODEC_SERVER_ORIGINS)`,
      );
    res.setHeader("Access-Control-Allow-Origin", origin);
    res.setHeader("Vary", "Origin");
    res.setHeader("Access-Control-Allow-Credentials", "true");
    res.setHeader("Access-Control-Allow-Methods", "POST, OPTIONS");
    res.setHeader("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Namespace");
    res.setHeader("Access-Control-Max-Age", "600");
  };
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    cors(req, res);
    if (authorize === "loopback") {
      // No token, so who may ask is decided by where the request comes from and whom it names.
      const host = req.headers.host ?? "";
      if (!isLoopbackHost(hostOfHeader(host)))
        throw new HttpError(
          403,
          `refused Host "${host}": without tokens this codec server answers loopback names only`,
        );
      if (!isLoopbackHost(req.socket.remoteAddress ?? ""))
        throw new HttpError(403, "without tokens this codec server serves loopback peers only");
    }
    // Preflights carry no credentials by design: answer them before the authorization check.
    if (req.method === "OPTIONS") return void res.writeHead(204).end();
    const route = (req.url ?? "").split("?")[0].replace(/\/+$/, "");
    const op = route.endsWith("/encode") ? "encode" : route.endsWith("/decode") ? "decode" : undefined;
    if (!op) throw new HttpError(404, "not found: POST /encode or /decode");
    if (req.method !== "POST") throw new HttpError(405, `${req.method} not allowed: POST /${op}`);
    // A form or a no-cors fetch can only send "simple" types; JSON needs a preflight, which a foreign origin fails.
    if (!/^application\/json\s*(;|$)/i.test(req.headers["content-type"] ?? ""))
      throw new HttpError(415, `POST /${op} takes Content-Type: application/json`);
    const namespace = req.headers["x-namespace"] as string | undefined;
    if (authorize !== "loopback" && !(await authorize(req.headers.authorization, namespace)))
      throw new HttpError(401, "not authorized to see this namespace's payloads");
    let payloads: Payload[];
    try {
      const body = JSON.parse(await readBody(req, limit)) as { payloads?: JsonPayload[] };
      if (!Array.isArray(body.payloads)) throw new Error('expected { "payloads": [...] }');
      payloads = body.payloads.map(toPayload);
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw new HttpError(400, `bad request body: ${(err as Error).message}`);
    }
    if (op === "encode") for (const codec of options.codecs) payloads = await codec.encode(payloads);
    else {
      if (options.externalStorage) payloads = await resolvePayloadClaims(payloads, options.externalStorage);
      for (const codec of [...options.codecs].reverse()) payloads = await codec.decode(payloads);
    }
    send(res, 200, { payloads: payloads.map(toJson) });
  };
  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof CodecKeyError)
        return send(res, 422, { error: err.message, keyId: err.keyId, reason: err.reason });
      if (err instanceof HttpError) return send(res, err.status, { error: err.message, ...err.extra });
      if (err instanceof BlobNotFoundError) return send(res, 404, { error: err.message, code: err.code });
      send(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  };
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
  const server = createServer(codecRequestHandler(options));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => resolve(server));
  });
}
