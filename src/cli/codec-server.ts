/**
 * `npm run codec-server [-- --port 8888 --host 127.0.0.1 --origin http://localhost:8233]`: Temporal's
 * codec server protocol over the built-in codec (keys from JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE), for the
 * Temporal UI (`npm run temporal` points the dev server's UI at it when codec keys are set) and
 * `temporal --codec-endpoint`. Who may decrypt:
 * - JAI_CODEC_SERVER_TOKENS set: requests carrying `Authorization: Bearer <one of them>`;
 * - else, on loopback (the default host): loopback peers, without a token, since the dev server's UI has no
 *   sign-in and so no token to forward; anyone with a shell on this machine can then decrypt through it;
 * - JAI_CODEC_SERVER_AUTH=none: anyone who reaches the port (compose, where the port is published on the
 *   host's loopback only); off loopback without either, it refuses to start (exit 2).
 * A browser request from an origin other than the UI's is refused (403) in every mode.
 */
import { codecFromEnv } from "../node/codec/config.js";
import { blobStorageFromEnv } from "../node/blobs/config.js";
import {
  bearerTokens,
  CodecServerConfigError,
  createCodecServer,
  type CodecServerOptions,
} from "../http/codec-server.js";
import { runningServer } from "../node/server-state.js";
import { parseCli, runCli } from "./program.js";

/**
 * The dev server's UI (`npm run temporal`, port 8233). Not compose's 8080: on a developer's machine that is the
 * commonest port of any local app, and a page there could decrypt through a tokenless codec server (compose
 * names its UI's origins itself, JAI_CODEC_SERVER_ORIGINS).
 */
const DEFAULT_ORIGINS = ["http://localhost:8233", "http://127.0.0.1:8233"];

export const CODEC_SERVER_USAGE = `usage: npm run codec-server -- [--port n] [--host ip] [--origin url]...
  --port      JAI_CODEC_SERVER_PORT, default 8888
  --host      JAI_CODEC_SERVER_HOST, default 127.0.0.1
  --origin    JAI_CODEC_SERVER_ORIGINS (comma-separated): the Temporal UI's origin(s); default
              ${DEFAULT_ORIGINS.join(",")} and the UI of the dev server \`npm run temporal\` runs from this folder
Keys: JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE (as the workers). Access: JAI_CODEC_SERVER_TOKENS (comma-separated
bearer tokens); without them, loopback peers only, and only on a loopback --host; JAI_CODEC_SERVER_AUTH=none
serves anyone who can reach the port.`;

async function main(): Promise<number> {
  const env = process.env;
  const parsed = parseCli(
    process.argv.slice(2),
    { port: { type: "string" }, host: { type: "string" }, origin: { type: "string", multiple: true } },
    { allowPositionals: false },
  );
  const values = parsed.values as { port?: string; host?: string; origin?: string[] };
  const codec = codecFromEnv(env);
  if (!codec) {
    console.error(`codec-server: no keys: set JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE\n${CODEC_SERVER_USAGE}`);
    return 2;
  }
  const tokens = (env.JAI_CODEC_SERVER_TOKENS ?? "")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  const authMode = env.JAI_CODEC_SERVER_AUTH?.trim() ?? "";
  if (authMode !== "" && authMode !== "none") {
    console.error(
      `codec-server: JAI_CODEC_SERVER_AUTH must be "none" or unset, got "${authMode}"\n${CODEC_SERVER_USAGE}`,
    );
    return 2;
  }
  const authorize: CodecServerOptions["authorize"] = tokens.length
    ? bearerTokens(tokens)
    : authMode === "none"
      ? () => true
      : "loopback";
  const port = Number(values.port ?? env.JAI_CODEC_SERVER_PORT ?? 8888);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`codec-server: --port must be a port number, got "${values.port ?? env.JAI_CODEC_SERVER_PORT}"`);
    return 2;
  }
  const host = values.host ?? env.JAI_CODEC_SERVER_HOST ?? "127.0.0.1";
  const listed = values.origin?.length ? values.origin : env.JAI_CODEC_SERVER_ORIGINS?.split(",");
  const origins = listed?.length
    ? listed.map((o) => o.trim()).filter(Boolean)
    : [...new Set([...DEFAULT_ORIGINS, ...(await devServerUiOrigins())])];
  if (origins.includes("*") && !tokens.length) {
    // "*" without tokens would let every web page the person opens decrypt through their browser.
    console.error('codec-server: origin "*" needs JAI_CODEC_SERVER_TOKENS; name the Temporal UI\'s origin instead');
    return 2;
  }
  let server;
  try {
    // With JAI_BLOB_STORE the UI's claims are read from the store and decrypted like inline payloads.
    const externalStorage = blobStorageFromEnv(env);
    server = await createCodecServer({ codecs: [codec], origins, authorize, port, host, externalStorage });
  } catch (err) {
    if (!(err instanceof CodecServerConfigError)) throw err;
    console.error(`codec-server: ${err.message}`);
    return 2;
  }
  const bound = (server.address() as { port: number }).port;
  const access = tokens.length
    ? `${tokens.length} bearer token(s)`
    : authorize === "loopback"
      ? "no token: loopback peers only"
      : "NO authorization: anyone who reaches the port";
  console.log(
    `codec server on http://${host}:${bound} (keys ${codec.keyIds.join(", ")}, current ${codec.currentKeyId}; origins ${origins.join(", ")}; ${access})`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  return 0;
}

/** The Web UI origin of the dev server `npm run temporal` keeps running from this folder (any UI port), if any. */
async function devServerUiOrigins(): Promise<string[]> {
  const uiUrl = (await runningServer())?.uiUrl;
  if (!uiUrl) return [];
  const { origin, port } = new URL(uiUrl);
  return [origin, `http://127.0.0.1:${port}`, `http://localhost:${port}`];
}

runCli(CODEC_SERVER_USAGE, main);
