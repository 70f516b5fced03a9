/**
 * What a worker brings up, and no more: it registers only the agent's activities, bundles only the agent's
 * workflows, starts one Temporal worker (plus the own-queue worker with routing) and, as a process, listens on no
 * socket besides the ones asked for.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { Worker } from "@temporalio/worker";
import { createAgentWorker, type AgentWorker } from "../../src/worker/worker.js";
import { openTestEnv, uniqueId, type TestEnv } from "../support/helpers.js";
import { killAllWorkers, startSourceWorker } from "../support/service/processes.js";

let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv();
}, 60000);

afterAll(async () => {
  killAllWorkers();
  await env?.close();
});

/** The agent's activities: what every worker registers. */
const AGENT_ACTIVITIES = [
  "agentSearchAttributesExist",
  "checkOutput",
  "compactContext",
  "deliverRunWebhook",
  "executeFastTool",
  "executeTool",
  "prepareToolCall",
  "resolveRunSetup",
  "streamAssistantMessage",
];

const activityNames = (w: Worker) => [...(w.options.activities as Map<string, unknown>).keys()].sort();

/** Creates a worker, counting the Temporal workers it creates; runs it briefly, then stops it. */
async function created(extra: { routeModelCalls?: boolean } = {}) {
  const create = jest.spyOn(Worker, "create");
  let worker: AgentWorker;
  let results: Promise<Worker>[];
  try {
    worker = await createAgentWorker({
      connection: env.connection,
      taskQueue: uniqueId("footprint"),
      workflowBundle: env.bundle,
      ...extra,
    });
  } finally {
    results = create.mock.results.map((r) => r.value as Promise<Worker>);
    create.mockRestore();
  }
  const made = await Promise.all(results);
  await worker.runUntil(new Promise((r) => setTimeout(r, 500)));
  return { worker, queues: made.map((w) => w.options.taskQueue) };
}

describe("a worker", () => {
  it("registers the agent's activities only, bundles the loop's workflow alone and starts one worker per queue", async () => {
    const { worker, queues } = await created();
    expect(queues).toEqual([worker.taskQueue, worker.ownTaskQueue]);
    expect(activityNames(worker.worker)).toEqual(AGENT_ACTIVITIES);
    expect(activityNames(worker.ownWorker!)).toEqual(AGENT_ACTIVITIES);
    // The agent's bundle (the default one) has the loop's workflow and no other.
    expect(env.bundle.code).toContain("agentRun");
    // Without routing: the shared worker alone.
    const unrouted = await created({ routeModelCalls: false });
    expect(unrouted.queues).toEqual([unrouted.worker.taskQueue]);
    expect(unrouted.worker.ownWorker).toBeUndefined();
  }, 60000);
});

/** TCP ports `pid` listens on (its sockets' inodes, found in the kernel's tables of listening sockets). */
function listeningPorts(pid: number): { host: string; port: number }[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]);
    } catch {
      // Closed meanwhile.
    }
  }
  const found: { host: string; port: number }[] = [];
  for (const table of ["tcp", "tcp6"]) {
    const rows = readFileSync(`/proc/${pid}/net/${table}`, "utf8").trim().split("\n").slice(1);
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      if (cols[3] !== "0A" || !inodes.has(cols[9])) continue; // 0A: LISTEN
      const [addr, port] = cols[1].split(":");
      const host =
        table === "tcp"
          ? (addr.match(/../g) ?? [])
              .reverse()
              .map((h) => parseInt(h, 16))
              .join(".")
          : `[${addr}]`;
      found.push({ host, port: parseInt(port, 16) });
    }
  }
  return found.sort((a, b) => a.port - b.port);
}

/** `jai-agent worker` in a process of its own, ready; its output so far and its exit. */
async function workerProcess(args: string[], extraEnv: Record<string, string>) {
  const worker = await startSourceWorker(args, { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS, ...extraEnv });
  return { pid: worker.pid, healthPort: worker.healthPort ?? NaN, output: worker.output, stop: worker.stop };
}

describe("the worker process", () => {
  it("listens on the health port it was asked for and nothing else", async () => {
    const plain = await workerProcess(["--task-queue", uniqueId("sockets"), "--health-port", "0", "--no-metrics"], {});
    expect(plain.healthPort).toBeGreaterThan(0);
    // Some time running first: a listener opened once the workers run would show too.
    await new Promise((r) => setTimeout(r, 3000));
    expect(listeningPorts(plain.pid)).toEqual([{ host: "127.0.0.1", port: plain.healthPort }]);
    expect(await plain.stop()).toBe(0);
  }, 180000);

  it("--help prints every setting of the table: flag, environment variable, config key and default", async () => {
    const { SETTINGS, WORKER_USAGE: usage } = await import("../../src/worker/process/run.js");
    const WORKER_USAGE = usage.replace(/\s+/g, " ");
    for (const s of SETTINGS) {
      if (s.flag) expect(WORKER_USAGE).toContain(`--${s.flag}`);
      if (s.env) expect(WORKER_USAGE).toContain(s.env);
      if (s.config) expect(WORKER_USAGE).toContain(`config ${s.config}`);
      if (s.default) expect(WORKER_USAGE).toContain(`[default ${s.default.split(" ")[0]}`);
    }
  });
});
