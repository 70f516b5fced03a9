/**
 * The docker-compose topology for real, without Docker: PostgreSQL, the Temporal
 * server built from source on it, and two worker processes started the way the
 * image starts them. 60 agent runs; one worker is SIGKILLed and the server is
 * restarted while runs are in flight; every run must end with the transcript of
 * an undisturbed run. Run by `npm run test:cluster` (.ci/run), not `npm test`.
 * A killed worker's runs go on after their calls' heartbeat timeout and its sticky queue timeout.
 * The workers and the client keep payloads of 1 KB and more in the PostgreSQL blob store (JAI_BLOB_STORE, as
 * compose's workers do, threshold lowered so that most of every run's payloads go there, docs/large-payloads.md).
 */
import { randomUUID } from "node:crypto";
import { rmSync } from "node:fs";
import { Client, Connection } from "@temporalio/client";
import { runResult, startAgentRun } from "../../src/client/client.js";
import { blobStorage, claimDrivers } from "../../src/node/blobs/config.js";
import { PostgresBlobDriver } from "../../src/node/blobs/drivers.js";
import type { AgentRunResult } from "../../src/shared/contracts.js";
import { ensureTemporalServer } from "../../scripts/tools.js";
import { startPostgres, type Postgres } from "../support/cluster/postgres.js";
import {
  createTemporalServer,
  freeLowPort,
  setupSchema,
  type TemporalServer,
} from "../support/cluster/temporal-server.js";
import { buildDist, demoWorkspace, startWorkerProcess, type WorkerProcess } from "../support/service/processes.js";
import { normalizedTranscript } from "../support/service/transcript.js";
import { connectTestClient } from "../support/client-connection.js";

const RUNS_PER_WAVE = 30;
const timings: Record<string, number> = {};
const t0 = Date.now();
const mark = (what: string) => (timings[what] = Date.now() - t0);

let pg: Postgres | undefined;
let server: TemporalServer | undefined;
let workspace: string | undefined;
const workers: WorkerProcess[] = [];
let connection: Connection | undefined;
let blobs: PostgresBlobDriver | undefined;

afterAll(async () => {
  await connection?.close();
  await blobs?.close();
  await Promise.all(
    workers.map((w) => (w.child.exitCode === null && w.child.signalCode === null ? w.kill() : undefined)),
  );
  await server?.stop();
  server?.cleanup();
  pg?.stop();
  if (workspace) rmSync(workspace, { recursive: true, force: true });
  console.log(`cluster suite timings (ms since start): ${JSON.stringify(timings)}`);
});

/** A run's result; a client call cut by the server restart is asked again. */
async function resultOf(client: Client, workflowId: string): Promise<AgentRunResult> {
  for (let attempt = 0; ; attempt++) {
    try {
      // Runs that end with stopReason "error" fail with the result in the failure: runResult returns it all the same.
      return await runResult(client.workflow.getHandle(workflowId));
    } catch (err) {
      const transient = /unavailable|connect|deadline|14 UNAVAILABLE|ECONNREFUSED/i.test(String(err));
      if (!transient || attempt >= 60) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

test("PostgreSQL + Temporal server + 2 worker processes: 60 runs survive a worker SIGKILL and a server restart", async () => {
  const tools = ensureTemporalServer((line) => console.log(line));
  mark("tools");
  const dist = buildDist("cluster-dist");
  mark("build");
  workspace = demoWorkspace();
  pg = startPostgres(await freeLowPort(new Set()));
  setupSchema(tools, pg.port);
  mark("postgres+schema");
  server = await createTemporalServer(tools, pg.port);
  mark("server");

  const taskQueue = `cluster-${randomUUID()}`;
  const blobStore = `postgres://${pg.user}@127.0.0.1:${pg.port}/postgres`;
  const workerEnv = {
    TEMPORAL_ADDRESS: server.address,
    JAI_TASK_QUEUE: taskQueue,
    JAI_WORKSPACE: workspace,
    JAI_HEALTH_PORT: "0",
    JAI_BLOB_STORE: blobStore,
    JAI_BLOB_THRESHOLD: "1k",
  };
  workers.push(...(await Promise.all([startWorkerProcess(dist, workerEnv), startWorkerProcess(dist, workerEnv)])));
  mark("workers");

  connection = await connectTestClient(server.address);
  blobs = new PostgresBlobDriver(blobStore);
  const client = new Client({
    connection,
    dataConverter: { externalStorage: blobStorage(blobs, { threshold: 1024 }) },
  });
  const start = (i: number) =>
    startAgentRun(client, {
      taskQueue,
      workflowId: `cluster-${i}-${randomUUID()}`,
      model: "demo/offline-scripted",
      prompt: "What is in this workspace?",
      // A dead worker's model call and workflow task move to the other worker after seconds, not the defaults.
      modelActivity: { heartbeatTimeout: "5s" },
      workflowTaskTimeout: "2s",
    }).then((h) => h.workflowId);

  const reference0 = await start(0);
  const reference = await resultOf(client, reference0);
  expect({ stopReason: reference.stopReason, errorMessage: reference.errorMessage }).toEqual({
    stopReason: "stop",
    errorMessage: undefined,
  });
  // Its payloads went through the store: history holds claims, the store their bytes.
  expect(claimDrivers(await client.workflow.getHandle(reference0).fetchHistory())).toEqual([blobs.name]);
  expect((await blobs.stats()).blobs).toBeGreaterThan(0);
  const expected = normalizedTranscript(reference.messages);
  expect(expected.filter((m) => (m as { role: string }).role === "toolResult")).toHaveLength(3); // list_dir, then 2 parallel reads
  mark("reference run");

  const settled = new Set<string>();
  const track = (ids: string[]) => ids.map((id) => resultOf(client, id).finally(() => settled.add(id)));
  const waitUntil = async (what: string, ok: () => boolean) => {
    const deadline = Date.now() + 300000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  // Wave 1: kill a worker with runs in flight; a replacement comes up as an orchestrator would start one.
  const wave1 = await Promise.all(Array.from({ length: RUNS_PER_WAVE }, (_, i) => start(1 + i)));
  const results1 = track(wave1);
  await waitUntil("5 runs of wave 1", () => settled.size >= 5);
  const inFlightAtKill = wave1.filter((id) => !settled.has(id)).length;
  await workers[0].kill();
  mark("worker SIGKILL");
  workers.push(await startWorkerProcess(dist, workerEnv));

  // Wave 2: restart the Temporal server with runs in flight.
  const wave2 = await Promise.all(Array.from({ length: RUNS_PER_WAVE }, (_, i) => start(1 + RUNS_PER_WAVE + i)));
  const results2 = track(wave2);
  await waitUntil("5 runs of wave 2", () => wave2.filter((id) => settled.has(id)).length >= 5);
  const inFlightAtRestart = wave2.filter((id) => !settled.has(id)).length;
  await server.stop();
  mark("server stopped");
  await server.start();
  mark("server restarted");

  const results = await Promise.all([...results1, ...results2]);
  mark("all runs done");
  expect(inFlightAtKill).toBeGreaterThan(0);
  expect(inFlightAtRestart).toBeGreaterThan(0);
  expect(results).toHaveLength(2 * RUNS_PER_WAVE);
  const different = results
    .map((r, i) => ({ i, r }))
    .filter(
      ({ r }) =>
        r.stopReason !== "stop" || JSON.stringify(normalizedTranscript(r.messages)) !== JSON.stringify(expected),
    );
  expect(different.map(({ i, r }) => ({ run: i, stopReason: r.stopReason, errorMessage: r.errorMessage }))).toEqual([]);
  console.log(
    `cluster: ${results.length} runs; in flight at the SIGKILL: ${inFlightAtKill}, at the server restart: ${inFlightAtRestart}`,
  );

  // The survivors drain on SIGTERM and exit 0.
  const codes = await Promise.all(workers.slice(1).map((w) => w.stop()));
  expect(codes).toEqual([0, 0]);
}, 900000);
