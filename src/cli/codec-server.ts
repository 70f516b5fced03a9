/**
 * `npm run codec-server [-- --port 8888 --host 127.0.0.1 --origin http://localhost:8233]`: Temporal's
 * codec server protocol over the built-in codec (keys from JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE), for the
 * Temporal UI (`npm run temporal -- --codec-server` points the dev server's UI at it) and
 * `temporal --codec-endpoint`. Requests must carry `Authorization: Bearer <token>` for a token in
 * JAI_CODEC_SERVER_TOKENS, unless JAI_CODEC_SERVER_AUTH=none (anyone who reaches the port reads plaintext).
 */
import { parseArgs } from "node:util";
import { codecFromEnv } from "../codec/config.js";
import { bearerTokens, createCodecServer, type CodecAuthorizer } from "../codec/server.js";

export const CODEC_SERVER_USAGE = `usage: npm run codec-server -- [--port n] [--host ip] [--origin url]...
  --port      JAI_CODEC_SERVER_PORT, default 8888
  --host      JAI_CODEC_SERVER_HOST, default 127.0.0.1
  --origin    JAI_CODEC_SERVER_ORIGINS (comma-separated): the Temporal UI's origin(s),
              default http://localhost:8233,http://127.0.0.1:8233,http://localhost:8080
Keys: JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE (as the workers). Access: JAI_CODEC_SERVER_TOKENS (comma-separated
bearer tokens), or JAI_CODEC_SERVER_AUTH=none to serve anyone who can reach the port.`;

async function main(): Promise<number> {
  const env = process.env;
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      port: { type: "string" },
      host: { type: "string" },
      origin: { type: "string", multiple: true },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help) {
    console.log(CODEC_SERVER_USAGE);
    return 0;
  }
  const codec = codecFromEnv(env);
  if (!codec) {
    console.error(`codec-server: no keys: set JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE\n${CODEC_SERVER_USAGE}`);
    return 2;
  }
  const tokens = (env.JAI_CODEC_SERVER_TOKENS ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  let authorize: CodecAuthorizer;
  if (tokens.length) authorize = bearerTokens(tokens);
  else if (env.JAI_CODEC_SERVER_AUTH === "none") authorize = () => true;
  else {
    console.error(
      "codec-server: set JAI_CODEC_SERVER_TOKENS (bearer tokens allowed to decrypt), or JAI_CODEC_SERVER_AUTH=none to knowingly serve everyone",
    );
    return 2;
  }
  const port = Number(values.port ?? env.JAI_CODEC_SERVER_PORT ?? 8888);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`codec-server: --port must be a port number, got "${values.port ?? env.JAI_CODEC_SERVER_PORT}"`);
    return 2;
  }
  const host = values.host ?? env.JAI_CODEC_SERVER_HOST ?? "127.0.0.1";
  const origins = values.origin?.length
    ? values.origin
    : (env.JAI_CODEC_SERVER_ORIGINS ?? "http://localhost:8233,http://127.0.0.1:8233,http://localhost:8080")
        .split(",")
        .map((o) => o.trim())
        .filter(Boolean);
  const server = await createCodecServer({ codecs: [codec], origins, authorize, port, host });
  const bound = (server.address() as { port: number }).port;
  console.log(
    `codec server on http://${host}:${bound} (keys ${codec.keyIds.join(", ")}, current ${codec.currentKeyId}; origins ${origins.join(", ")}; ${tokens.length ? `${tokens.length} bearer token(s)` : "NO authorization"})`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`codec-server: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
