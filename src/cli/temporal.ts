/**
 * `npm run temporal [-- --port 7233 --ui-port 8233 --ip 127.0.0.1 --ui-codec-endpoint http://127.0.0.1:8888]`:
 * a Temporal dev server with its Web UI on the project's SQLite file, until Ctrl-C. Without --port,
 * TEMPORAL_ADDRESS's port, else 7233 when free. --ui-codec-endpoint (or JAI_UI_CODEC_ENDPOINT) makes the UI
 * decode payloads through a codec server (`npm run codec-server`); with codec keys in the environment
 * (JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE) it defaults to that command's address, http://127.0.0.1:8888
 * (JAI_CODEC_SERVER_PORT), so the UI shows plaintext once it runs; "none" turns it off.
 */
import { portInUse, startDevServer } from "../node/dev-server.js";
import { clearServerState, dbFile, runningServer, writeServerState } from "../node/server-state.js";
import { parseCli, runCli, UsageError } from "./program.js";

const USAGE = `usage: npm run temporal -- [--port n] [--ui-port n] [--ip address] [--ui-codec-endpoint url|none]
  a Temporal dev server with its Web UI on .jai/temporal.db, until Ctrl-C
  --port               default TEMPORAL_ADDRESS's port, else 7233 when free
  --ui-port            default 8233 when free
  --ip                 default 127.0.0.1
  --ui-codec-endpoint  the codec server the UI decodes payloads with (JAI_UI_CODEC_ENDPOINT); with codec keys set,
                       http://127.0.0.1:8888 (\`npm run codec-server\`); "none" turns it off`;

async function main(): Promise<number> {
  const parsed = parseCli(
    process.argv.slice(2),
    {
      port: { type: "string" },
      "ui-port": { type: "string" },
      ip: { type: "string" },
      "ui-codec-endpoint": { type: "string" },
    },
    { allowPositionals: false },
  );
  const values = parsed.values as Record<string, string | undefined>;
  const keysSet = Boolean(process.env.JAI_CODEC_KEYS?.trim() || process.env.JAI_CODEC_KEY_FILE?.trim());
  const askedEndpoint = (values["ui-codec-endpoint"] ?? process.env.JAI_UI_CODEC_ENDPOINT)?.trim();
  const uiCodecEndpoint =
    askedEndpoint === "" || askedEndpoint === "none"
      ? undefined
      : (askedEndpoint ??
        (keysSet ? `http://127.0.0.1:${process.env.JAI_CODEC_SERVER_PORT?.trim() || 8888}` : undefined));
  if (uiCodecEndpoint !== undefined && !/^https?:\/\/[^/]+/.test(uiCodecEndpoint))
    throw new UsageError(`--ui-codec-endpoint must be an http(s) URL, got "${uiCodecEndpoint}"`);
  const fromEnv = process.env.TEMPORAL_ADDRESS?.match(/^(.*):(\d+)$/);
  const ip = values.ip ?? (fromEnv && fromEnv[1] !== "localhost" ? fromEnv[1] : "127.0.0.1");
  const asPort = (value: string | undefined, name: string) => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0 || n > 65535)
      throw new UsageError(`${name} must be a port number, got "${value}"`);
    return n;
  };
  const askedPort = asPort(values.port, "--port") ?? asPort(fromEnv?.[2], "TEMPORAL_ADDRESS's port");
  const askedUiPort = asPort(values["ui-port"], "--ui-port");

  const existing = await runningServer();
  if (existing) {
    console.log(`A dev server is already running at ${existing.address}; Web UI: ${existing.uiUrl}`);
    return 0;
  }
  for (const [port, what] of [
    [askedPort, "--port"],
    [askedUiPort, "--ui-port"],
  ] as const) {
    if (port !== undefined && (await portInUse(port, ip))) {
      console.error(`Port ${port} (${what}) is in use on ${ip}: pick another one.`);
      return 1;
    }
  }

  const port = askedPort ?? ((await portInUse(7233)) ? undefined : 7233);
  const uiPort = askedUiPort ?? ((await portInUse(8233)) ? undefined : 8233);
  console.log("Starting the Temporal dev server...");
  const server = await startDevServer({
    dbFile: dbFile(),
    ip,
    port,
    uiPort,
    uiCodecEndpoint,
    log: (line) => console.log(line),
  });
  writeServerState({ address: server.address, uiUrl: server.uiUrl, pid: server.pid });
  console.log(`Temporal dev server: ${server.address} (namespace "default")`);
  console.log(
    `Web UI:              ${server.uiUrl}${uiCodecEndpoint ? ` (decodes payloads with ${uiCodecEndpoint})` : ""}`,
  );
  if (uiCodecEndpoint && askedEndpoint === undefined)
    console.log("                     (codec keys are set: `npm run codec-server` with the same keys serves it)");
  console.log(`History is kept in   ${server.dbFile}`);
  console.log("Press Ctrl-C to stop.");

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    clearServerState();
    await server.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
  // Until Ctrl-C: stop() ends the process.
  return new Promise<number>(() => {});
}

runCli(USAGE, main);
