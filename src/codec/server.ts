/**
 * Temporal's codec server protocol over the built-in codec, so the Temporal
 * UI (and `temporal --codec-endpoint`) show decrypted payloads to the people
 * allowed to see them: `POST /encode` and `POST /decode` take and return
 * `{ payloads: [{ metadata: { k: base64 }, data: base64 }] }`; CORS answers the
 * UI's origin; every request's `Authorization` header (which the UI forwards)
 * is checked first.
 */
import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Payload, PayloadCodec } from "@temporalio/common";
import { CodecKeyError } from "./aes-gcm.js";

/** Decides whether a request may see plaintext: the Authorization header as sent, and the X-Namespace header. */
export type CodecAuthorizer = (
  authorization: string | undefined,
  namespace: string | undefined,
) => boolean | Promise<boolean>;

export interface CodecServerOptions {
  /** Codecs, applied in order to encode and in reverse to decode (as a data converter does). */
  codecs: PayloadCodec[];
  /** Origins allowed to call from a browser (the Temporal UI's, e.g. "http://localhost:8233"); "*" allows any. */
  origins: string[];
  /** The authorization check; see `bearerTokens`. Required: pass `() => true` to knowingly serve everyone. */
  authorize: CodecAuthorizer;
  /** Largest request body; default 64 MB. */
  maxBodyBytes?: number;
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
  const cors = (req: IncomingMessage, res: ServerResponse) => {
    const origin = req.headers.origin;
    if (!origin) return;
    if (!options.origins.includes("*") && !options.origins.includes(origin)) return;
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
    // Preflights carry no credentials by design: answer them before the authorization check.
    if (req.method === "OPTIONS") return void res.writeHead(204).end();
    const route = (req.url ?? "").split("?")[0].replace(/\/+$/, "");
    const op = route.endsWith("/encode") ? "encode" : route.endsWith("/decode") ? "decode" : undefined;
    if (!op) throw new HttpError(404, "not found: POST /encode or /decode");
    if (req.method !== "POST") throw new HttpError(405, `${req.method} not allowed: POST /${op}`);
    const namespace = req.headers["x-namespace"] as string | undefined;
    if (!(await options.authorize(req.headers.authorization, namespace)))
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
    else for (const codec of [...options.codecs].reverse()) payloads = await codec.decode(payloads);
    send(res, 200, { payloads: payloads.map(toJson) });
  };
  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof CodecKeyError)
        return send(res, 422, { error: err.message, keyId: err.keyId, reason: err.reason });
      if (err instanceof HttpError) return send(res, err.status, { error: err.message, ...err.extra });
      send(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  };
}

/** An HTTP server speaking the codec server protocol; resolves once it listens (port 0: any free one). */
export function createCodecServer(options: CodecServerOptions & { port: number; host?: string }): Promise<Server> {
  const server = createServer(codecRequestHandler(options));
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host ?? "127.0.0.1", () => resolve(server));
  });
}
