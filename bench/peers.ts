/**
 * `npm run bench -- --peers`: Temporal's AI SDK integration, installed in its
 * own folder (it pins @temporalio/* 1.23.0; this repo uses 1.24.0) outside the
 * repo, run as its own worker process on the bench's dev server and driven
 * over stdin/stdout, so its runs interleave with ours.
 */
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from "node:child_process";
import { copyFile, mkdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { Bench } from "./common.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const source = path.join(here, "peers", "ai-sdk");
export const PEER_DIR = process.env.JAI_BENCH_PEERS ?? path.join(os.homedir(), ".cache", "jai-bench-peers", "ai-sdk");

/** One finished peer run: ids for its history, and its provider requests (ms timestamps). */
export interface PeerRun {
  workflowId: string;
  runId: string;
  startedAt: number;
  ms: number;
  steps: number;
  requests: number[];
}

export interface Peer {
  name: string;
  /** The queue its worker polls (workflows and every activity). */
  taskQueue: string;
  /** Its worker's process. */
  pid: number | undefined;
  /** One run of `turns` tool calls (and the answer), tool results of `bytes`. */
  run(id: string, turns: number, bytes: number): Promise<PeerRun>;
  /** `runs` such runs at once. */
  many(
    id: string,
    runs: number,
    turns: number,
    bytes: number,
  ): Promise<{ ms: number; runs: (PeerRun | { error: string })[] }>;
  close(): Promise<void>;
}

/** Installs the peer's packages when its package.json changed (npm registry, ordinary client). */
async function install(): Promise<void> {
  await mkdir(PEER_DIR, { recursive: true });
  const wanted = await readFile(path.join(source, "package.json"), "utf8");
  const have = await readFile(path.join(PEER_DIR, "package.json"), "utf8").catch(() => "");
  for (const f of ["runner.ts", "workflows.ts"]) await copyFile(path.join(source, f), path.join(PEER_DIR, f));
  if (
    have === wanted &&
    (await readFile(path.join(PEER_DIR, "node_modules", "@temporalio", "ai-sdk", "package.json"), "utf8").catch(
      () => "",
    ))
  )
    return;
  await copyFile(path.join(source, "package.json"), path.join(PEER_DIR, "package.json"));
  console.error(`installing the AI SDK peer into ${PEER_DIR}...`);
  execFileSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: PEER_DIR, stdio: "inherit" });
}

/** Starts the peer's worker on `taskQueue`. */
export async function openAiSdkPeer(bench: Bench, taskQueue: string): Promise<Peer> {
  await install();
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--no-warnings", "--import", tsx, "runner.ts", bench.server.address, taskQueue],
    {
      cwd: PEER_DIR,
      stdio: ["pipe", "pipe", "pipe"],
    },
  );
  child.stderr.on("data", (d) => process.stderr.write(`[ai-sdk peer] ${d}`));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<any> => {
    const { value, done } = await lines.next();
    if (done) throw new Error(`the AI SDK peer exited (code ${child.exitCode})`);
    // Its SDK core logs warnings (e.g. payload size) to stdout too.
    if (!value.startsWith("{")) return next();
    const out = JSON.parse(value);
    if (out.error) throw new Error(`AI SDK peer: ${out.error}`);
    return out;
  };
  await next(); // ready
  const ask = async (cmd: object) => {
    child.stdin.write(`${JSON.stringify(cmd)}\n`);
    return next();
  };
  return {
    name: "Temporal AI SDK integration (@temporalio/ai-sdk 1.23.0, ai 7)",
    taskQueue,
    pid: child.pid,
    run: (id, turns, bytes) => ask({ op: "run", id, turns, bytes }),
    many: (id, runs, turns, bytes) => ask({ op: "many", id, runs, turns, bytes }),
    async close() {
      child.stdin.write(`${JSON.stringify({ op: "stop" })}\n`);
      await new Promise((r) => child.once("exit", r));
    },
  };
}
