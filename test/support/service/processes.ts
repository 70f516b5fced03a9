/**
 * Builds the package the way the image does (tsc, the console's bundle, then `jai-agent bundle`) into
 * a folder of its own, and starts worker processes from it the way the image
 * starts them (`node dist/cli/worker-main.js`).
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { nodeEntry } from "../entry.js";

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

function run(cmd: string, args: string[], cwd = repoRoot): void {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, NODE_OPTIONS: "" } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed: ${r.stderr || r.stdout}`);
}

/** Compiles src into `.jai/<name>` (inside the repo, so node_modules resolve); bundles the console and workflows there. */
export function buildDist(name: string): string {
  const out = path.join(repoRoot, ".jai", name);
  rmSync(out, { recursive: true, force: true });
  run(process.execPath, [
    path.join(repoRoot, "node_modules", "typescript", "bin", "tsc"),
    "-p",
    "tsconfig.build.json",
    "--outDir",
    out,
    "--sourceMap",
    "false",
  ]);
  run(process.execPath, ["--import", "tsx", "scripts/build-console.ts", path.join(out, "http", "console", "bundle")]);
  run(process.execPath, [path.join(out, "cli", "jai-agent.js"), "bundle"]);
  return out;
}

/** A small workspace for the default file tools, so every worker's demo run reads the same files. */
export function demoWorkspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), "jai-workspace-"));
  writeFileSync(
    path.join(dir, "package.json"),
    JSON.stringify({ name: "demo-workspace", description: "fixture", dependencies: { a: "1" } }, null, 2),
  );
  writeFileSync(path.join(dir, "README.md"), "# Demo workspace\n\nA fixture for worker processes.\n");
  mkdirSync(path.join(dir, "src"));
  return dir;
}

export interface WorkerProcess {
  child: ChildProcess;
  pid: number;
  /** stdout + stderr so far. */
  output(): string;
  /** The /healthz + /readyz port it printed. */
  healthPort?: number;
  /** SIGKILL, resolves on exit. */
  kill(): Promise<void>;
  /** SIGTERM, resolves with the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `node <dist>/cli/worker-main.js` with `env` and waits for its "ready" line. */
export async function startWorkerProcess(
  dist: string,
  env: Record<string, string>,
  args: string[] = [],
): Promise<WorkerProcess> {
  return spawnWorker([path.join(dist, "cli", "worker-main.js"), ...args], os.tmpdir(), env);
}

/**
 * `jai-agent worker` from the sources (test/support/entry.ts), as `npm run worker` runs it, with `env` over this process's
 * (an undefined value removes a variable) and an optional `--import` preload; waits for its "ready" line.
 */
export async function startSourceWorker(
  args: string[],
  env: Record<string, string | undefined> = {},
  options: { preload?: string } = {},
): Promise<WorkerProcess> {
  const preload = options.preload ? ["--import", pathToFileURL(options.preload).href] : [];
  return spawnWorker(
    [...preload, ...nodeEntry(path.join(repoRoot, "src/cli/worker-main.ts")), ...args],
    repoRoot,
    await withSharedBundle(env),
  );
}

/**
 * `env` with the run's shared workflow bundle as the worker's prebuilt one (`JAI_WORKFLOW_BUNDLE`, what the
 * image's `dist/workflow-bundle.js` is to a deployed worker), so a source worker does not bundle at start: that
 * costs ~4 s of CPU a process, and a suite starts dozens. The bundle with encrypted failures when the worker has
 * keys (one without would be refused and bundled again). Not when `env` names the variable: set to undefined, the
 * worker bundles at start, as a test of that wants. A worker with traces on bundles at start whatever it is given.
 */
export async function withSharedBundle(
  env: Record<string, string | undefined>,
): Promise<Record<string, string | undefined>> {
  if ("JAI_WORKFLOW_BUNDLE" in env) return env;
  const keys = "JAI_CODEC_KEYS" in env ? env.JAI_CODEC_KEYS : process.env.JAI_CODEC_KEYS;
  const file = "JAI_CODEC_KEY_FILE" in env ? env.JAI_CODEC_KEY_FILE : process.env.JAI_CODEC_KEY_FILE;
  // Imported here: bundles.ts loads the worker, which most importers of this file never need.
  const { sharedBundleFile } = await import("../bundles.js");
  return { ...env, JAI_WORKFLOW_BUNDLE: await sharedBundleFile(keys || file ? "encrypted-failures" : "default") };
}

/** Every worker process a test file started: `killAll()` in its afterAll. */
const started = new Set<ChildProcess>();
export function killAllWorkers(): void {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  started.clear();
}

async function spawnWorker(
  argv: string[],
  cwd: string,
  extraEnv: Record<string, string | undefined>,
): Promise<WorkerProcess> {
  const env: Record<string, string | undefined> = { ...process.env, NODE_OPTIONS: "", ...extraEnv };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, argv, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  started.add(child);
  let output = "";
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker did not get ready in 90 s: ${output}`)), 90000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/^ready$/m.test(output)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    void exit.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited with ${code} before it was ready: ${output}`));
    });
  });
  const port = /health on :(\d+)/.exec(output)?.[1];
  return {
    child,
    pid: child.pid!,
    output: () => output,
    healthPort: port ? Number(port) : undefined,
    kill: async () => {
      child.kill("SIGKILL");
      await exit;
    },
    stop: async () => {
      child.kill("SIGTERM");
      return exit;
    },
  };
}
