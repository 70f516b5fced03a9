/**
 * A real Temporal server for tests, `npm start` and `npm run temporal`: the
 * Temporal CLI's dev server on a SQLite file. The CLI is found in this order:
 * $TEMPORAL_CLI_PATH, `temporal` on PATH, the copy installed earlier in the
 * cache folder, a `go install` of the pinned version into that folder, and
 * last @temporalio/testing's own download (needs internet).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { Connection } from "@temporalio/client";
import { AGENT_SEARCH_ATTRIBUTES, cliSearchAttributeSpecs } from "../shared/search-attributes.js";

/** The newest CLI tag that `go install pkg@version` accepts (later ones carry `replace` directives). */
export const TEMPORAL_CLI_VERSION = "v1.5.1";
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`;

/** A folder under the user's cache (outside any clone, so fresh clones and CI reuse what was built there). */
export function userCacheDir(name: string): string {
  return path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), name);
}

export function cliCacheDir(): string {
  return process.env.JAI_TEMPORAL_HOME ?? userCacheDir("jai-temporal");
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const file = path.join(dir, name);
    if (dir && isExecutable(file)) return file;
  }
  return undefined;
}

export interface FindCliOptions {
  /** Build with `go install` when no copy is found (takes minutes the first time). Default true. */
  allowBuild?: boolean;
  /** Progress messages. */
  log?: (line: string) => void;
}

/** Returns the path of a Temporal CLI, or undefined when only @temporalio/testing's download is left. */
export function findTemporalCli(options: FindCliOptions = {}): string | undefined {
  const log = options.log ?? (() => {});
  const fromEnv = process.env.TEMPORAL_CLI_PATH;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    return fromEnv;
  }
  const fromPath = onPath("temporal");
  if (fromPath) return fromPath;
  const binDir = path.join(cliCacheDir(), "bin");
  const cached = path.join(binDir, "temporal");
  if (isExecutable(cached)) return cached;
  if (options.allowBuild === false || !onPath("go")) return undefined;
  log(`Building the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${binDir} (go install; a few minutes the first time)...`);
  mkdirSync(binDir, { recursive: true });
  const build = spawnSync("go", ["install", GO_PACKAGE], {
    env: { ...process.env, GOBIN: binDir, GOFLAGS: process.env.GOFLAGS ?? "-mod=mod" },
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (build.status === 0 && isExecutable(cached)) return cached;
  log(`go install failed (exit ${build.status}); falling back to @temporalio/testing's download`);
  return undefined;
}

/** A port the OS says is free right now on `host`. */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, host, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** True when something accepts connections on host:port. */
export function portInUse(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(true));
    server.listen(port, host, () => server.close(() => resolve(false)));
  });
}

export interface DevServerOptions {
  /** SQLite file; the server's state survives restarts on the same file. Default: a fresh temp file. */
  dbFile?: string;
  /** Interface to listen on. Default 127.0.0.1. */
  ip?: string;
  /** gRPC port. Default: a free one. */
  port?: number;
  /** Web UI port, or false for no UI. Default: a free one. */
  uiPort?: number | false;
  /** A codec server (e.g. `npm run codec-server`) the Web UI decodes payloads with: `--ui-codec-endpoint`. */
  uiCodecEndpoint?: string;
  /** Longest wait for the server to answer. Default 60 s (a first start can be slow). */
  startTimeoutMs?: number;
  /** Progress messages. */
  log?: (line: string) => void;
  /**
   * Dynamic config values (`--dynamic-config-value key=value`), e.g.
   * `{ "system.enableActivityEagerExecution": true }`: the server hands an activity
   * task back to the worker completing the workflow task that scheduled it
   * (on this dev server it halves the time of a tool turn: docs/benchmarks.md).
   */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** Port of the server's Prometheus `/metrics` listener (`--metrics-port`), e.g. persistence requests by operation. Default: none. */
  metricsPort?: number;
  /**
   * SQLite pragmas (`--sqlite-pragma name=value`), e.g. `{ journal_mode: "wal", synchronous: "off" }` for a
   * throwaway server (a test run's): commits stop waiting for the disk; a machine crash can lose the file, a
   * server crash cannot (WAL). Default: none, SQLite's own (every commit synced).
   */
  sqlitePragmas?: Record<string, string>;
}

export interface DevServer {
  /** host:port for clients and workers. */
  address: string;
  /** The Web UI, when started with one. */
  uiUrl?: string;
  /** The SQLite file. */
  dbFile: string;
  /** The Prometheus endpoint, when started with `metricsPort`. */
  metricsUrl?: string;
  /** OS process id (undefined for the @temporalio/testing fallback). */
  pid?: number;
  /** Stops the server and waits for it to exit. */
  stop(): Promise<void>;
}

/** Waits until a Temporal frontend answers at `address`. */
export async function waitForServer(
  address: string,
  timeoutMs: number,
  exited?: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const why = exited?.();
    if (why) throw new Error(why);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(`Temporal server at ${address} did not answer within ${timeoutMs} ms: ${String(lastError)}`);
}

function stopChild(child: ChildProcess, graceMs = 10000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const killer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(killer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/**
 * Starts `temporal server start-dev` and resolves once it answers. With ports it chose itself, a server that exits
 * while starting (a port another process took between choosing and binding it: the dev server binds more ports
 * than it is given) is started again on fresh ports, twice at most.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const ownPorts = options.port === undefined && (options.uiPort === undefined || options.uiPort === false);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startDevServerOnce(options);
    } catch (err) {
      if (!ownPorts || attempt >= 3 || !(err instanceof DevServerExited)) throw err;
      (options.log ?? (() => {}))(
        `temporal server exited while starting (${err.message.slice(0, 200)}); again on other ports`,
      );
    }
  }
}

/** The dev server process exited before it answered. */
class DevServerExited extends Error {}

async function startDevServerOnce(options: DevServerOptions): Promise<DevServer> {
  const log = options.log ?? (() => {});
  const ip = options.ip ?? "127.0.0.1";
  const dbFile = options.dbFile ?? path.join(os.tmpdir(), `jai-temporal-${process.pid}-${Date.now()}.db`);
  mkdirSync(path.dirname(dbFile), { recursive: true });
  const port = options.port ?? (await freePort(ip));
  const uiPort = options.uiPort === false ? undefined : (options.uiPort ?? (await freePort(ip)));
  const cli = findTemporalCli({ log });
  if (!cli) {
    if (options.uiCodecEndpoint)
      throw new Error("uiCodecEndpoint needs the Temporal CLI (TEMPORAL_CLI_PATH, PATH or `npm run ensure-temporal`)");
    return startWithSdkDownload({ ip, port, uiPort, dbFile });
  }

  const args = [
    "server",
    "start-dev",
    "--ip",
    ip,
    "--port",
    String(port),
    "--db-filename",
    dbFile,
    "--log-level",
    "error",
  ];
  const dynamicConfig = {
    // Runs started with `eagerStart` get their first workflow task in the start response (see StartAgentRunOptions);
    // on by default in recent servers, said here so an older CLI behaves the same.
    "system.enableEagerWorkflowStart": true,
    ...options.dynamicConfig,
  };
  for (const [key, value] of Object.entries(dynamicConfig))
    args.push("--dynamic-config-value", `${key}=${JSON.stringify(value)}`);
  // The agent's search attributes (AgentStatus, ...), so runs can be found by them; re-registering on a kept db is fine.
  for (const spec of cliSearchAttributeSpecs()) args.push("--search-attribute", spec);
  if (uiPort === undefined) args.push("--headless");
  else args.push("--ui-port", String(uiPort));
  if (options.uiCodecEndpoint && uiPort !== undefined) args.push("--ui-codec-endpoint", options.uiCodecEndpoint);
  if (options.metricsPort !== undefined) args.push("--metrics-port", String(options.metricsPort));
  for (const [name, value] of Object.entries(options.sqlitePragmas ?? {}))
    args.push("--sqlite-pragma", `${name}=${value}`);
  const child = spawn(cli, args, { stdio: ["ignore", "ignore", "pipe"] });
  // The head says why it failed (a panic's first line), the tail where.
  let head = "";
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    if (head.length < 2000) head = (head + chunk.toString()).slice(0, 2000);
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  const address = `${ip}:${port}`;
  try {
    await waitForServer(address, options.startTimeoutMs ?? 60000, () =>
      child.exitCode !== null
        ? `temporal server exited with code ${child.exitCode}: ${head.trim()}${stderr.startsWith(head) ? "" : `\n…\n${stderr.trim()}`}`
        : undefined,
    );
  } catch (err) {
    const exited = child.exitCode !== null;
    await stopChild(child);
    throw exited && err instanceof Error ? new DevServerExited(err.message) : err;
  }
  return {
    address,
    uiUrl: uiPort === undefined ? undefined : `http://${ip === "0.0.0.0" ? "localhost" : ip}:${uiPort}`,
    dbFile,
    metricsUrl: options.metricsPort === undefined ? undefined : `http://${ip}:${options.metricsPort}/metrics`,
    pid: child.pid,
    stop: () => stopChild(child),
  };
}

async function startWithSdkDownload(o: {
  ip: string;
  port: number;
  uiPort?: number;
  dbFile: string;
}): Promise<DevServer> {
  const { TestWorkflowEnvironment } = await import("@temporalio/testing");
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: o.ip,
      port: o.port,
      dbFilename: o.dbFile,
      ui: o.uiPort !== undefined,
      uiPort: o.uiPort,
      searchAttributes: [...AGENT_SEARCH_ATTRIBUTES],
    },
  });
  return {
    address: `${o.ip}:${o.port}`,
    uiUrl: o.uiPort === undefined ? undefined : `http://${o.ip}:${o.uiPort}`,
    dbFile: o.dbFile,
    stop: () => env.teardown(),
  };
}

/** The project's own folder for state that must not be committed (.jai/, git-ignored). */
export function stateDir(cwd = process.cwd()): string {
  const dir = path.join(cwd, ".jai");
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true });
  return dir;
}
