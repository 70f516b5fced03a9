/**
 * A real Temporal server (the Go build of go.temporal.io/server, not the dev
 * server) on PostgreSQL: schema set up with temporal-sql-tool from the server
 * module's own schema files, a minimal postgres12 config, stop and restart.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import Long from "long";
import { portInUse, waitForServer } from "../../../src/node/dev-server.js";
import type { TemporalServerTools } from "../../../scripts/tools.js";
import { connectTestClient } from "../client-connection.js";

export interface TemporalServer {
  address: string;
  /** Stops the server (SIGTERM) and waits for it to exit. */
  stop(): Promise<void>;
  /** Starts it again on the same database and ports. */
  start(): Promise<void>;
  /** The server's log, for failure messages. */
  log(): string;
  /** Removes its files (after stop). */
  cleanup(): void;
}

/** Creates the two databases and loads every versioned schema step into them. */
export function setupSchema(tools: TemporalServerTools, pgPort: number): void {
  for (const [db, folder] of [
    ["temporal", "temporal"],
    ["temporal_visibility", "visibility"],
  ]) {
    const base = [
      "--plugin",
      "postgres12",
      "--ep",
      "127.0.0.1",
      "-p",
      String(pgPort),
      "-u",
      "postgres",
      "--pw",
      "",
      "--db",
      db,
    ];
    for (const args of [
      ["create-database"],
      ["setup-schema", "-v", "0.0"],
      ["update-schema", "-d", path.join(tools.postgresSchema, folder, "versioned")],
    ]) {
      const r = spawnSync(tools.sqlTool, [...base, ...args], { encoding: "utf8" });
      if (r.status !== 0) throw new Error(`temporal-sql-tool ${args[0]} on ${db} failed: ${r.stderr || r.stdout}`);
    }
  }
}

const postgresStore = (pgPort: number, db: string, conns: number) => `
      sql:
        pluginName: "postgres12"
        databaseName: "${db}"
        connectAddr: "127.0.0.1:${pgPort}"
        connectProtocol: "tcp"
        user: "postgres"
        password: ""
        maxConns: ${conns}
        maxIdleConns: ${conns}
        maxConnLifetime: "1h"`;

/** One SQLite file for both stores, its schema set up when the server opens it (as the server's sqlite-file config). */
const sqliteStore = (file: string) => `
      sql:
        pluginName: "sqlite"
        databaseName: ${JSON.stringify(file)}
        connectAddr: "localhost"
        connectProtocol: "tcp"
        connectAttributes:
          cache: "private"
          setup: "true"
          journal_mode: "wal"
          synchronous: "0"
        maxConns: 1
        maxIdleConns: 1
        maxConnLifetime: "1h"`;

/** The server's store: PostgreSQL on this port, or a SQLite file (`sqlite`, the server's schema set up on start). */
type ServerStore = number | { sqlite: string };

function configYaml(store: ServerStore, p: Record<string, number>, dynamicConfigFile?: string): string {
  const datastores =
    typeof store === "number"
      ? `
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: 4
  datastores:
    postgres-default:${postgresStore(store, "temporal", 20)}
    postgres-visibility:${postgresStore(store, "temporal_visibility", 4)}`
      : `
  defaultStore: sqlite-default
  visibilityStore: sqlite-visibility
  numHistoryShards: 1
  datastores:
    sqlite-default:${sqliteStore(store.sqlite)}
    sqlite-visibility:${sqliteStore(store.sqlite)}`;
  const service = (name: string) => `
  ${name}:
    rpc:
      grpcPort: ${p[`${name}Grpc`]}
      membershipPort: ${p[`${name}Membership`]}
      bindOnLocalHost: true${name === "frontend" ? `\n      httpPort: ${p.frontendHttp}` : ""}`;
  return `log:
  stdout: true
  level: warn
persistence:${datastores}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:${["frontend", "history", "matching", "worker"].map(service).join("")}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: "active"
  currentClusterName: "active"
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: "frontend"
      rpcAddress: "127.0.0.1:${p.frontendGrpc}"
dcRedirectionPolicy:
  policy: "noop"
${dynamicConfigFile ? `dynamicConfigClient:\n  filepath: ${JSON.stringify(dynamicConfigFile)}\n  pollInterval: "60s"\n` : ""}`;
}

/** Registers a namespace and waits until the frontend serves it (its namespace cache refreshes every ~10 s). */
async function ensureNamespace(address: string, namespace: string, timeoutMs: number): Promise<void> {
  const connection = await connectTestClient(address);
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(24 * 3600) },
      });
    } catch (err) {
      if (!/already exists/i.test(String(err))) throw err;
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        await connection.workflowService.listWorkflowExecutions({ namespace, pageSize: 1 });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  } finally {
    await connection.close();
  }
}

/**
 * A free port below 32768: the server stores its membership port in a smallint
 * column, and the OS hands out ephemeral ports above it.
 */
export async function freeLowPort(taken: Set<number>): Promise<number> {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    if (!taken.has(port) && !(await portInUse(port))) {
      taken.add(port);
      return port;
    }
  }
}

/**
 * @param store PostgreSQL's port (its schema set up by `setupSchema`), or "sqlite": a SQLite file in the server's
 *   folder, set up by the server itself (the deploy test's server: nothing else to start).
 * @param dynamicConfig Dynamic config values for every namespace and task queue, e.g.
 *   `{ "matching.numTaskqueueReadPartitions": 1 }` (the bench's `--server-config`).
 */
export async function createTemporalServer(
  tools: Pick<TemporalServerTools, "server">,
  store: number | "sqlite",
  dynamicConfig: Record<string, string | number | boolean> = {},
): Promise<TemporalServer> {
  const ports: Record<string, number> = {};
  const taken = new Set<number>();
  for (const name of [
    "frontendGrpc",
    "frontendMembership",
    "frontendHttp",
    "historyGrpc",
    "historyMembership",
    "matchingGrpc",
    "matchingMembership",
    "workerGrpc",
    "workerMembership",
  ]) {
    ports[name] = await freeLowPort(taken);
  }
  const root = mkdtempSync(path.join(os.tmpdir(), "jai-temporal-server-"));
  mkdirSync(path.join(root, "config"));
  const keys = Object.keys(dynamicConfig);
  const dynamicConfigFile = keys.length > 0 ? path.join(root, "config", "dynamicconfig.yaml") : undefined;
  if (dynamicConfigFile)
    writeFileSync(
      dynamicConfigFile,
      keys.map((key) => `${key}:\n  - value: ${JSON.stringify(dynamicConfig[key])}\n`).join(""),
    );
  writeFileSync(
    path.join(root, "config", "development.yaml"),
    configYaml(store === "sqlite" ? { sqlite: path.join(root, "temporal.db") } : store, ports, dynamicConfigFile),
  );
  const address = `127.0.0.1:${ports.frontendGrpc}`;
  let child: ChildProcess | undefined;
  let output = "";
  const server: TemporalServer = {
    address,
    log: () => output,
    async start() {
      const proc = spawn(
        tools.server,
        ["--root", root, "--config", "config", "--env", "development", "--allow-no-auth", "start"],
        {
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      child = proc;
      const keep = (chunk: Buffer) => {
        output = (output + chunk.toString()).slice(-20000);
      };
      proc.stdout?.on("data", keep);
      proc.stderr?.on("data", keep);
      await waitForServer(address, 90000, () =>
        proc.exitCode !== null ? `temporal server exited with ${proc.exitCode}: ${output.slice(-3000)}` : undefined,
      );
      await ensureNamespace(address, "default", 60000);
    },
    async stop() {
      const proc = child;
      child = undefined;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        const killer = setTimeout(() => proc.kill("SIGKILL"), 30000);
        proc.once("exit", () => {
          clearTimeout(killer);
          resolve();
        });
        proc.kill("SIGTERM");
      });
    },
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
  await server.start();
  return server;
}
