/**
 * `npm run soak -- --minutes N` (default 10): the cluster suite's topology (PostgreSQL, the Temporal server built
 * from source, 3 worker processes started as the image starts them; all on loopback, on free ports of their own)
 * under a steady mixed workload and faults on a jittered schedule, with every run checked as it ends and the
 * ledger of tool effects checked at the end. Every run is encrypted with the project's payload codec; the soak
 * process also hosts an MCP server (Streamable HTTP) the scripts call and a completion-webhook receiver, and
 * checks MCP results, webhook deliveries and the raw histories (no plaintext) at the end. Writes
 * `<out>/summary.json`, the histories of runs that broke an invariant (`<out>/violations/`, decoded), the
 * workers' logs, and the report (`<out>/report.md`; `--report docs/soak.md` updates the tracked one, `--report none` skips it).
 * Exit 0 when no invariant was broken, 1 otherwise, 2 on a setup failure. Stops by itself; every child process
 * is stopped on the way out, Ctrl-C included.
 *
 * Options: --minutes N, --rate runs-per-minute (default 30), --window seconds (latency/memory windows; default
 * 60, 300 from 10 minutes on), --kill-every seconds (default 30), --out dir (default .jai/soak/<time>),
 * --report file|none (default <out>/report.md), --no-build (reuse .jai/soak-dist), --no-pg-restart, --sabotage (one tool call in ~15 records
 * its effect twice: the soak must then fail with ledger violations, proof that the check bites; it prints how many
 * duplicates were injected and how many the check counted).
 */
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { setTimeout as sleep } from "node:timers/promises";
import ts from "typescript";
import { Client, Connection } from "@temporalio/client";
import { historyToJSON } from "@temporalio/common/lib/proto-utils.js";
import { ensureTemporalServer } from "./tools.js";
import { quantile } from "../bench/stats.js";
import { startPostgres, type Postgres } from "../test/support/cluster/postgres.js";
import {
  createTemporalServer,
  freeLowPort,
  setupSchema,
  type TemporalServer,
} from "../test/support/cluster/temporal-server.js";
import { buildDist, repoRoot, startWorkerProcess, type WorkerProcess } from "../test/support/service/processes.js";
import { checkContexts, checkLedger, runsWithLocalRepeats, type Fault } from "./soak/ledger.js";
import { Workload, type RunRecord } from "./soak/workload.js";
import { checkMcp, startSoakMcpServer, type SoakMcpServer } from "./soak/mcp-server.js";
import {
  checkWebhooks,
  startWebhookReceiver,
  WEBHOOK_SECRET_NAME,
  type WebhookReceiver,
} from "./soak/webhook-receiver.js";
import { checkEncryption, soakCodec } from "./soak/encryption.js";
import { decodeHistoryPayloads } from "../src/node/codec/history.js";
import { dataConverterFromEnv } from "../src/node/codec/config.js";
import { soakReportFile, writeReport, type FaultRecord, type SoakSummary, type WindowStats } from "./soak/report.js";

const { values: opts } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    rate: { type: "string", default: "30" },
    window: { type: "string" },
    "kill-every": { type: "string", default: "30" },
    out: { type: "string" },
    report: { type: "string" },
    "no-build": { type: "boolean", default: false },
    "no-pg-restart": { type: "boolean", default: false },
    sabotage: { type: "boolean", default: false },
  },
});
const minutes = Number(opts.minutes);
const durationMs = minutes * 60000;
const rate = Number(opts.rate);
const windowMs = Number(opts.window ?? (minutes >= 10 ? 300 : 60)) * 1000;
const killEveryMs = Number(opts["kill-every"]) * 1000;
const HEARTBEAT_S = 5;
const WORKERS = 3;
const out = path.resolve(
  opts.out ?? path.join(repoRoot, ".jai", "soak", new Date().toISOString().replace(/[:.]/g, "-")),
);
mkdirSync(path.join(out, "violations"), { recursive: true });
mkdirSync(path.join(out, "workers"), { recursive: true });
const ledgerFile = path.join(out, "ledger.jsonl");
// Generated files go where the run names: into docs/ only with `--report docs/soak.md`.
const reportFile = soakReportFile(opts.report, out);
const command = `npm run soak -- ${process.argv.slice(2).join(" ")}`.trim();

const log = (line: string) => console.log(`[soak ${((Date.now() - t0) / 1000).toFixed(0).padStart(4)}s] ${line}`);
const t0 = Date.now();

// ---- everything started, stopped on the way out ----
let pg: Postgres | undefined;
let server: TemporalServer | undefined;
let connection: Connection | undefined;
let mcpServer: SoakMcpServer | undefined;
let receiver: WebhookReceiver | undefined;
const workers: WorkerProcess[] = [];
const allWorkers: WorkerProcess[] = [];
let cleaning: Promise<void> | undefined;

function saveWorkerLogs(): void {
  for (const w of allWorkers) writeFileSync(path.join(out, "workers", `${w.pid}.log`), w.output());
}

function stopPostgres(): void {
  try {
    pg?.stop();
  } catch (err) {
    console.error(`soak: stopping PostgreSQL: ${String(err).slice(0, 300)}`);
  }
}

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    for (const w of allWorkers) {
      if (w.child.exitCode !== null || w.child.signalCode !== null) continue;
      try {
        process.kill(w.pid, "SIGCONT");
      } catch {
        // gone already
      }
      w.child.kill("SIGKILL");
    }
    saveWorkerLogs();
    if (server) writeFileSync(path.join(out, "temporal-server.log"), server.log());
    await server?.stop().catch(() => undefined);
    server?.cleanup();
    stopPostgres();
    await connection?.close().catch(() => undefined);
    await mcpServer?.close().catch(() => undefined);
    await receiver?.close().catch(() => undefined);
  })();
  return cleaning;
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.on(signal, () => {
    console.error(`soak: ${signal}, stopping every child process`);
    void cleanup().finally(() => process.exit(130));
  });
// A client call cut by the cleanup (a gRPC retry on a closed channel) must not end the process before it is done.
process.on("uncaughtException", (err) => {
  console.error(`soak: uncaught ${String(err).slice(0, 300)}`);
  void cleanup().finally(() => process.exit(2));
});
// Last resort on any exit: PostgreSQL runs detached (pg_ctl), so stop it synchronously; workers die with SIGKILL.
process.on("exit", () => {
  for (const w of allWorkers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill("SIGKILL");
  stopPostgres();
});

/** Transpiles the worker config module and the scripted model next to the dist, for plain node. */
function writeWorkerConfig(dist: string): string {
  const dir = path.join(dist, "soak");
  mkdirSync(dir, { recursive: true });
  for (const name of ["worker-config", "script-model"]) {
    const source = readFileSync(path.join(repoRoot, "scripts", "soak", `${name}.ts`), "utf8");
    const js = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
    }).outputText;
    writeFileSync(path.join(dir, `${name}.js`), js);
  }
  return path.join(dir, "worker-config.js");
}

/**
 * The workflow bundle for workers with a payload codec (`jai-agent bundle --encrypt-failures`, as the worker's
 * own notice says): with the plain one they would bundle at every start, slowing each replacement.
 */
function encryptedBundle(dist: string, reuse: boolean): string {
  const file = path.join(dist, "workflow-bundle-encrypted.js");
  if (reuse && existsSync(file)) return file;
  const r = spawnSync(
    process.execPath,
    [path.join(dist, "cli", "jai-agent.js"), "bundle", file, "--encrypt-failures"],
    {
      cwd: repoRoot,
      encoding: "utf8",
      env: { ...process.env, NODE_OPTIONS: "" },
    },
  );
  if (r.status !== 0) throw new Error(`jai-agent bundle --encrypt-failures failed: ${r.stderr || r.stdout}`);
  return file;
}

function rssMb(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

const jitter = (ms: number, share = 0.3) => ms * (1 - share + Math.random() * 2 * share);
/** Percentile `p` (0-100) by the benches' rank rule; none in a window without turns. */
const percentile = (xs: number[], p: number) => (xs.length ? quantile(xs, p / 100) : undefined);

async function main(): Promise<number> {
  log(`output in ${out}`);
  const tools = ensureTemporalServer(log);
  const distDir = path.join(repoRoot, ".jai", "soak-dist");
  const dist =
    opts["no-build"] && existsSync(path.join(distDir, "cli", "worker-main.js")) ? distDir : buildDist("soak-dist");
  const config = writeWorkerConfig(dist);
  const bundle = encryptedBundle(dist, opts["no-build"]!);
  const codec = soakCodec();
  mcpServer = await startSoakMcpServer();
  const webhookSecret = randomBytes(24).toString("base64url");
  receiver = await startWebhookReceiver(webhookSecret);
  log(`MCP server on ${mcpServer.url}, webhook receiver on ${receiver.url}`);
  pg = startPostgres(await freeLowPort(new Set()));
  setupSchema(tools, pg.port);
  server = await createTemporalServer(tools, pg.port);
  log(`PostgreSQL on :${pg.port}, Temporal server on ${server.address}`);
  // Payloads of 2 KB and more go to the blob store on the same PostgreSQL (as compose's workers do; its restart
  // below takes the store down too): docs/large-payloads.md.
  const blobEnv = {
    JAI_BLOB_STORE: `postgres://${pg.user}@127.0.0.1:${pg.port}/postgres`,
    JAI_BLOB_THRESHOLD: "2k",
  };

  const taskQueue = `soak-${randomUUID()}`;
  const workerEnv = {
    TEMPORAL_ADDRESS: server.address,
    JAI_TASK_QUEUE: taskQueue,
    JAI_CONFIG: config,
    SOAK_LEDGER: ledgerFile,
    SOAK_CONTEXTS: path.join(out, "contexts.jsonl"),
    SOAK_HEARTBEAT_TIMEOUT: `${HEARTBEAT_S}s`,
    SOAK_SABOTAGE: opts.sabotage ? "1" : "0",
    JAI_WORKFLOW_BUNDLE: bundle,
    JAI_CODEC_KEYS: codec.keys,
    ...blobEnv,
    SOAK_MCP_URL: mcpServer.url,
    // The documented way to let a secret sign for one receiver: its name's secret and origins in the environment.
    [`JAI_WEBHOOK_SECRET_${WEBHOOK_SECRET_NAME.toUpperCase()}`]: webhookSecret,
    [`JAI_WEBHOOK_ORIGINS_${WEBHOOK_SECRET_NAME.toUpperCase()}`]: receiver.origin,
  };
  const startWorker = async () => {
    const w = await startWorkerProcess(dist, workerEnv);
    workers.push(w);
    allWorkers.push(w);
    return w;
  };
  await Promise.all(Array.from({ length: WORKERS }, startWorker));
  log(`${WORKERS} workers up: ${workers.map((w) => w.pid).join(", ")}`);

  connection = await Connection.connect({ address: server.address });
  // The codec's client: every check of a run's transcript reads it decoded, as the run's owner would.
  const dataConverter = dataConverterFromEnv({ JAI_CODEC_KEYS: codec.keys, ...blobEnv })!;
  const client = new Client({ connection, dataConverter });
  const violationsDir = path.join(out, "violations");
  const saving: Promise<void>[] = [];
  const saveHistory = async (run: RunRecord) => {
    const runs: string[] = [];
    for await (const r of client.workflow.list({ query: `WorkflowId = '${run.id}'` })) runs.push(r.runId);
    for (const runId of runs.length ? runs : [undefined]) {
      // Decoded before it is saved, so `npm run replay -- --file` needs no key (the soak's key dies with it).
      const history = await decodeHistoryPayloads(
        await client.workflow.getHandle(run.id, runId).fetchHistory(),
        codec.dataConverter.payloadCodecs ?? [],
        dataConverter.externalStorage,
      );
      writeFileSync(path.join(violationsDir, `${run.id}${runId ? `.${runId}` : ""}.json`), historyToJSON(history));
    }
  };
  const workload = new Workload({
    client,
    taskQueue,
    webhook: { url: receiver.url, secretName: WEBHOOK_SECRET_NAME },
    onViolation: (run, what) => {
      console.log(`VIOLATION ${run.id} (${run.scenario}): ${what}`);
      if (run.violations.length === 1)
        saving.push(saveHistory(run).catch((err) => log(`saving ${run.id}: ${String(err)}`)));
    },
  });

  // ---- faults on a jittered schedule ----
  const faults: FaultRecord[] = [];
  const faultedPids = new Set<number>();
  const faultWindows: [number, number][] = [];
  /** The fault log the ledger check reads: when each signal was sent, each freeze ended, each restart was over. */
  const faultLog: Fault[] = [];
  const stopped = new Set<number>();
  const start = Date.now();
  const end = start + durationMs;
  const serverRestarts: number[] = [];
  if (minutes <= 10) serverRestarts.push(start + durationMs * 0.45);
  else for (let t = 10 * 60000; t < durationMs; t += 10 * 60000) serverRestarts.push(start + jitter(t, 0.05));
  const pgRestartAt = opts["no-pg-restart"] ? Infinity : start + durationMs * 0.75;
  let pgRestarted = false;
  let nextKill = start + jitter(killEveryMs * 0.7);
  let nextStop = start + jitter(Math.min(45000, durationMs / 3));
  const stopEveryMs = 90000;

  const live = () =>
    workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null && !stopped.has(w.pid));
  const faultLoop = async () => {
    while (Date.now() < end) {
      const now = Date.now();
      if (serverRestarts.length && now >= serverRestarts[0]) {
        serverRestarts.shift();
        const at = Date.now();
        await server!.stop();
        await sleep(2000);
        await server!.start();
        faultLog.push({ kind: "restart", what: "server", at, until: Date.now() });
        faultWindows.push([at - 1000, Date.now() + HEARTBEAT_S * 1000 + 5000]);
        faults.push({
          at: at - start,
          kind: "server restart",
          detail: `down ${((Date.now() - at) / 1000).toFixed(1)} s`,
        });
        log(`Temporal server restarted (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      } else if (!pgRestarted && now >= pgRestartAt) {
        pgRestarted = true;
        const at = Date.now();
        pg!.restart();
        faultLog.push({ kind: "restart", what: "database", at, until: Date.now() });
        faultWindows.push([at - 1000, Date.now() + HEARTBEAT_S * 1000 + 10000]);
        faults.push({
          at: at - start,
          kind: "PostgreSQL restart",
          detail: `-m immediate, ${((Date.now() - at) / 1000).toFixed(1)} s`,
        });
        log(`PostgreSQL restarted (${((Date.now() - at) / 1000).toFixed(1)} s)`);
      } else if (now >= nextKill) {
        nextKill = now + jitter(killEveryMs);
        const victim = live()[Math.floor(Math.random() * live().length)];
        if (victim && live().length > 1) {
          faultedPids.add(victim.pid);
          faultLog.push({ kind: "kill", pid: victim.pid, at: Date.now() });
          await victim.kill();
          workers.splice(workers.indexOf(victim), 1);
          faults.push({ at: Date.now() - start, kind: "worker SIGKILL", detail: `pid ${victim.pid}` });
          log(`SIGKILL worker ${victim.pid}; starting a replacement`);
          try {
            const w = await startWorker();
            log(`replacement worker ${w.pid} ready`);
          } catch (err) {
            log(`replacement worker failed to start: ${String(err).slice(0, 300)}`);
          }
        }
      } else if (now >= nextStop) {
        nextStop = now + jitter(stopEveryMs);
        const candidates = live();
        const victim = candidates[Math.floor(Math.random() * candidates.length)];
        if (victim && candidates.length > 1) {
          const forMs = HEARTBEAT_S * 1000 + jitter(4000);
          faultedPids.add(victim.pid);
          stopped.add(victim.pid);
          const freeze: Fault = { kind: "stop", pid: victim.pid, at: Date.now(), until: Infinity };
          faultLog.push(freeze);
          process.kill(victim.pid, "SIGSTOP");
          faults.push({
            at: Date.now() - start,
            kind: "worker SIGSTOP",
            detail: `pid ${victim.pid} for ${(forMs / 1000).toFixed(1)} s`,
          });
          log(`SIGSTOP worker ${victim.pid} for ${(forMs / 1000).toFixed(1)} s`);
          setTimeout(() => {
            stopped.delete(victim.pid);
            freeze.until = Date.now();
            try {
              process.kill(victim.pid, "SIGCONT");
              log(`SIGCONT worker ${victim.pid}`);
            } catch {
              // killed meanwhile
            }
          }, forMs);
        }
      }
      await sleep(250);
    }
  };

  // ---- memory samples ----
  const rssSamples: { t: number; pid: number; mb: number }[] = [];
  const sampler = setInterval(() => {
    for (const w of workers) {
      const mb = rssMb(w.pid);
      if (mb !== undefined) rssSamples.push({ t: Date.now() - start, pid: w.pid, mb });
    }
  }, 5000);

  // ---- the workload at a steady rate ----
  log(`workload: ${rate} runs/min for ${minutes} min; a worker SIGKILL every ~${killEveryMs / 1000} s`);
  const faultsDone = faultLoop().catch((err) => log(`fault loop failed: ${String(err)}`));
  const status = setInterval(() => {
    const ended = workload.runs.filter((r) => r.done).length;
    const bad = workload.runs.filter((r) => r.violations.length).length;
    log(`runs started ${workload.runs.length}, ended ${ended}, in flight ${workload.inFlight}, with violations ${bad}`);
  }, 30000);
  while (Date.now() < end) {
    workload.startOne();
    await sleep(jitter(60000 / rate, 0.5));
  }
  await faultsDone;
  log(`workload stopped; draining ${workload.inFlight} runs (faults stopped)`);
  await workload.drain(300000);
  clearInterval(status);
  clearInterval(sampler);
  await Promise.all(saving);

  // ---- the end: ledger, windows, report ----
  // A local activity runs again when the workflow task that ran it is lost (timed out or failed): history records
  // each such task, and the ledger check takes them as faults, for the runs that need them only.
  for (const wf of runsWithLocalRepeats(ledgerFile)) {
    const runIds: string[] = [];
    for await (const r of client.workflow.list({ query: `WorkflowId = '${wf}'` })) runIds.push(r.runId);
    for (const runId of runIds) {
      const history = await client.workflow.getHandle(wf, runId).fetchHistory();
      for (const e of history.events ?? []) {
        if (!e.workflowTaskTimedOutEventAttributes && !e.workflowTaskFailedEventAttributes) continue;
        const t = e.eventTime;
        const at = t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : undefined;
        if (at !== undefined) faultLog.push({ kind: "task", wf, at });
      }
    }
  }
  const ledger = checkLedger(ledgerFile, workload.runs, faultLog);
  if (opts.sabotage)
    log(
      `sabotage: ${ledger.injected ?? 0} duplicate effects injected, ${ledger.unexplained} second effects counted as violations` +
        ` (${ledger.violations.length} calls), ${ledger.faultRetries} excused as retries after faults` +
        ((ledger.injected ?? 0) > ledger.unexplained
          ? `: the check missed ${(ledger.injected ?? 0) - ledger.unexplained}`
          : ""),
    );
  const contexts = checkContexts(path.join(out, "contexts.jsonl"), workload.runs);
  const mcp = checkMcp(mcpServer.calls, workload.runs, { pids: faultedPids, windows: faultWindows });
  const webhooks = checkWebhooks(receiver, workload.runs);
  log("reading every run's raw history (no codec) for plaintext");
  const encryption = await checkEncryption(connection, workload.runs, dataConverter.externalStorage);
  const atEnd = [
    ["context", contexts.violations],
    ["ledger", ledger.violations],
    ["MCP", mcp.violations],
    ["webhook", webhooks.violations],
    ["plaintext", encryption.violations],
  ] as const;
  const savedAtEnd = new Set<string>();
  for (const [what, list] of atEnd) {
    for (const v of list) {
      console.log(`VIOLATION ${v.run} (${what}): ${v.what}`);
      const run = workload.runs.find((r) => r.id === v.run);
      if (run && run.violations.length === 0 && !savedAtEnd.has(run.id)) {
        savedAtEnd.add(run.id);
        await saveHistory(run).catch(() => undefined);
      }
    }
  }
  const windows: WindowStats[] = [];
  const turnLatencies: { t: number; ms: number }[] = [];
  for (const r of workload.runs) {
    const ms = r.messages ?? [];
    for (let i = 1; i < ms.length; i++) {
      const m = ms[i];
      if (m.role !== "assistant") continue;
      // a turn: from its batch's last tool result to the assistant message (waits for people excluded)
      let j = i - 1;
      let from = 0;
      while (j >= 0 && ms[j].role === "toolResult") from = Math.max(from, Number(ms[j--].timestamp ?? 0));
      if (j === i - 1 || from === 0 || !m.timestamp) continue;
      turnLatencies.push({ t: m.timestamp - start, ms: m.timestamp - from });
    }
  }
  for (let w = 0; w * windowMs < Date.now() - start; w++) {
    const inW = <T extends { t: number }>(xs: T[]) => xs.filter((x) => x.t >= w * windowMs && x.t < (w + 1) * windowMs);
    const lat = inW(turnLatencies).map((x) => x.ms);
    const rss = inW(rssSamples);
    const last = new Map<number, number>();
    for (const s of rss) last.set(s.pid, s.mb);
    windows.push({
      from: (w * windowMs) / 1000,
      to: ((w + 1) * windowMs) / 1000,
      turns: lat.length,
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      rssMaxMb: rss.length ? Math.max(...rss.map((s) => s.mb)) : undefined,
      rssMeanMb: last.size ? [...last.values()].reduce((a, b) => a + b, 0) / last.size : undefined,
      kills: faults.filter((f) => f.kind === "worker SIGKILL" && f.at >= w * windowMs && f.at < (w + 1) * windowMs)
        .length,
    });
  }
  const byRun = new Map(workload.runs.map((r) => [r.id, r.violations.length]));
  for (const v of atEnd.flatMap(([, list]) => list)) byRun.set(v.run, (byRun.get(v.run) ?? 0) + 1);
  const summary: SoakSummary = {
    command,
    startedAt: new Date(start).toISOString(),
    minutes,
    wallSeconds: (Date.now() - t0) / 1000,
    rate,
    windowSeconds: windowMs / 1000,
    runs: workload.runs.map((r) => ({
      id: r.id,
      scenario: r.scenario,
      stopReason: r.stopReason,
      expectedStop: r.expectedStop,
      messages: r.messages?.length ?? 0,
      updates: r.updates.length,
      disconnects: r.updates.filter((u) => u.disconnected).length,
      interruptedOnce: r.interruptedOnce,
      violations: r.violations,
    })),
    faults,
    faultLog,
    ledger,
    contexts,
    mcp,
    webhooks,
    encryption,
    windows,
    runsWithViolations: [...byRun.values()].filter((n) => n > 0).length,
  };
  writeFileSync(path.join(out, "summary.json"), JSON.stringify(summary, null, 2));
  if (reportFile) writeReport(reportFile, summary);
  const violations =
    summary.runs.reduce((n, r) => n + r.violations.length, 0) + atEnd.reduce((n, [, list]) => n + list.length, 0);
  log(
    `done: ${summary.runs.length} runs (${summary.runs.filter((r) => r.stopReason).length} ended), ` +
      `${faults.filter((f) => f.kind === "worker SIGKILL").length} worker kills, ${faults.filter((f) => f.kind === "worker SIGSTOP").length} freezes, ` +
      `${faults.filter((f) => f.kind === "server restart").length} server restarts, ${faults.filter((f) => f.kind === "PostgreSQL restart").length} database restarts; ` +
      `${ledger.effects} ledger effects, ${ledger.faultRetries} retries after faults, ${contexts.calls} model calls checked, ` +
      `${mcp.results} MCP results (${mcp.served} served, ${mcp.duplicates.explained + mcp.duplicates.unexplained} repeats), ` +
      `${webhooks.runs} webhook runs (${webhooks.deliveries} deliveries, ${webhooks.duplicates} repeats, ${webhooks.refused} refused), ` +
      `${encryption.histories} raw histories checked for plaintext; ${violations} violations`,
  );
  log(`summary: ${path.join(out, "summary.json")}${reportFile ? `; report: ${reportFile}` : ""}`);
  return violations === 0 ? 0 : 1;
}

main()
  .then(
    async (code) => {
      await cleanup();
      if (code === 0) rmSync(path.join(out, "violations"), { recursive: true, force: true });
      process.exit(code);
    },
    async (err) => {
      console.error(`soak failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      await cleanup();
      process.exit(2);
    },
  )
  .catch(() => process.exit(2));
