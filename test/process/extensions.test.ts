/**
 * Optional features are off by default (DESIGN.md §7): a worker without extensions registers only the agent's
 * activities, bundles only the agent's workflows, starts one Temporal worker (plus the own-queue worker with
 * routing) and, as a process, listens on no socket besides the ones asked for. Fast failover, turned on, is the
 * contrast: its workers, its presence workflow and its links' listener appear.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { Worker } from "@temporalio/worker";
import { createAgentWorker, type AgentWorker } from "../../src/worker.js";
import type { AgentWorkerExtension } from "../../src/extension.js";
import { fastFailover, fleetTaskQueue } from "../../src/failover/index.js";
import { openTestEnv, uniqueId, type TestEnv } from "../support/helpers.js";
import { killAllWorkers, startSourceWorker } from "../support/service/processes.js";
import { waitFor } from "../support/crash/harness.js";
import { sharedBundle } from "../support/bundles.js";

let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv();
}, 60000);

afterAll(async () => {
  killAllWorkers();
  await env?.close();
});

/** The agent's activities: what every worker registers, with or without extensions. */
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

/** Creates a worker with `extensions`, counting the Temporal workers it creates; runs it briefly, then stops it. */
async function created(extensions: AgentWorkerExtension[], extra: { routeModelCalls?: boolean } = {}) {
  const create = jest.spyOn(Worker, "create");
  let worker: AgentWorker;
  let results: Promise<Worker>[];
  try {
    worker = await createAgentWorker({
      connection: env.connection,
      taskQueue: uniqueId("ext"),
      workflowBundle: env.bundle,
      extensions,
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

describe("a worker without extensions", () => {
  it("registers the agent's activities only, bundles no presence workflow and starts one worker per queue", async () => {
    const { worker, queues } = await created([]);
    expect(queues).toEqual([worker.taskQueue, worker.ownTaskQueue]);
    expect(activityNames(worker.worker)).toEqual(AGENT_ACTIVITIES);
    expect(activityNames(worker.ownWorker!)).toEqual(AGENT_ACTIVITIES);
    // The agent's bundle (the default one) has the loop's workflow and no other.
    expect(env.bundle.code).toContain("agentRun");
    expect(env.bundle.code).not.toContain("agentWorkerPresence");
    // Without routing: the shared worker alone.
    const unrouted = await created([], { routeModelCalls: false });
    expect(unrouted.queues).toEqual([unrouted.worker.taskQueue]);
    expect(unrouted.worker.ownWorker).toBeUndefined();
  }, 60000);

  it("with fast failover: the presence and fleet workers too, and its own bundle holds the presence workflow alone", async () => {
    const { worker, queues } = await created([fastFailover({ links: false })]);
    expect(queues).toEqual([
      worker.taskQueue,
      worker.ownTaskQueue,
      `${worker.ownTaskQueue}-presence`,
      fleetTaskQueue(worker.taskQueue),
    ]);
    // Its activities run on its own workers: the agent's workers register the agent's only.
    expect(activityNames(worker.worker)).toEqual(AGENT_ACTIVITIES);
    const presence = await sharedBundle("presence");
    expect(presence.code).toContain("agentWorkerPresence");
    expect(presence.code).not.toContain("agentRun");
    await expect(created([fastFailover()], { routeModelCalls: false })).rejects.toThrow(
      "fastFailover needs routeModelCalls",
    );
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
  it("listens on the health port it was asked for and nothing else; --fast-failover adds its links' loopback listener", async () => {
    const plain = await workerProcess(["--task-queue", uniqueId("sockets"), "--health-port", "0", "--no-metrics"], {
      // Whatever the caller's environment says: the default is under test.
      JAI_FAST_FAILOVER: "",
      JAI_FAILOVER_SECRET: "",
    });
    expect(plain.healthPort).toBeGreaterThan(0);
    // Some time running first: a listener opened once the workers run (as fast failover's links are) shows too.
    await new Promise((r) => setTimeout(r, 3000));
    expect(listeningPorts(plain.pid)).toEqual([{ host: "127.0.0.1", port: plain.healthPort }]);
    expect(await plain.stop()).toBe(0);

    // The contrast: fast failover on, without a secret, listens for its peers' links on loopback only.
    const failover = await workerProcess(
      ["--task-queue", uniqueId("sockets"), "--health-port", "0", "--no-metrics", "--fast-failover"],
      { JAI_FAILOVER_SECRET: "" },
    );
    // Its listener opens once the worker runs (its presence starts then): waited for.
    await waitFor(() => listeningPorts(failover.pid).length > 1, 30000, "the links' listener");
    const ports = listeningPorts(failover.pid);
    expect(ports).toHaveLength(2);
    expect(ports).toContainEqual({ host: "127.0.0.1", port: failover.healthPort });
    expect(ports.every((p) => p.host === "127.0.0.1")).toBe(true);
    expect(await failover.stop()).toBe(0);
  }, 180000);

  it("--help prints every setting of the table: flag, environment variable, config key and default", async () => {
    const { SETTINGS, WORKER_USAGE: usage } = await import("../../src/worker-process/run.js");
    const WORKER_USAGE = usage.replace(/\s+/g, " ");
    for (const s of SETTINGS) {
      if (s.flag) expect(WORKER_USAGE).toContain(`--${s.flag}`);
      if (s.env) expect(WORKER_USAGE).toContain(s.env);
      if (s.config) expect(WORKER_USAGE).toContain(`config ${s.config}`);
      if (s.default) expect(WORKER_USAGE).toContain(`[default ${s.default.split(" ")[0]}`);
    }
    expect(WORKER_USAGE).toMatch(/--fast-failover\s+JAI_FAST_FAILOVER=on; config fastFailover: on, off/);
    expect(WORKER_USAGE).toMatch(/--fast-failover[^[]*\[default off\]/);
  });
});
