/**
 * One event stream, whatever serves the run: a worker built with `createAgentWorker` (the README's snippet) or
 * with `AgentPlugin` on a plain Temporal Worker, in a process of its own, serves its runs' token deltas to
 * `getAgentRun(client, id).events()` in another process, found through the worker identity in the run's history.
 * Real dev server, real processes, a slow faux model (test/fixtures/library-worker.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Client, Connection } from "@temporalio/client";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import { discoverEventsUrl } from "../../src/client/events/subscribe.js";
import type { AgentEvent } from "../../src/shared/contracts.js";
import { repoRoot } from "../support/service/processes.js";
import { uniqueId, within } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";
import { connectTestClient } from "../support/client-connection.js";

let connection: Connection;
let client: Client;
const children = new Set<ChildProcess>();
beforeAll(async () => {
  connection = await connectTestClient(process.env.TEMPORAL_ADDRESS!);
  client = new Client({ connection });
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await connection?.close();
});

/** The fixture worker in its own process; resolves once it polls, with what it printed. */
async function libraryWorker(kind: "createAgentWorker" | "plugin", taskQueue: string, token: string) {
  const child = spawn(
    process.execPath,
    [...nodeEntry(path.join(repoRoot, "test/fixtures/library-worker.ts")), kind, taskQueue],
    // The token the worker's run server asks for; nothing else about events is configured.
    {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "", JAI_HTTP_TOKEN: token },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.add(child);
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  const line = await within(
    new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const first = /^\{.*\}$/m.exec(output);
        if (first) resolve(first[0]);
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      void exited.then((code) => reject(new Error(`${kind} worker exited ${code}: ${output}`)));
    }),
    120_000,
    `${kind} worker ready`,
  );
  const ready = JSON.parse(line) as { model: unknown; url?: string };
  return { ...ready, output: () => output, stop: () => (child.kill("SIGTERM"), exited) };
}

/** Starts a run on the worker and follows it from this process until agent_end; notes whether the run was still going at the first delta. */
async function followRun(taskQueue: string, model: unknown, token: string) {
  const workflowId = uniqueId("live-deltas");
  const handle = await startAgentRun(client, { taskQueue, workflowId, model: model as any, prompt: "Answer slowly." });
  const events: AgentEvent[] = [];
  let statusAtFirstDelta: string | undefined;
  // The client trusts loopback with its token: the same rule as for the worker process (docs/security.md).
  for await (const { event } of getAgentRun(client, workflowId).events({ token, trustedHosts: ["127.0.0.1"] })) {
    if (event.type === "message_update" && statusAtFirstDelta === undefined)
      statusAtFirstDelta = (await handle.workflow.describe()).status.name;
    events.push(event);
    if (event.type === "agent_end") break;
  }
  return { workflowId, events, statusAtFirstDelta, url: await discoverEventsUrl(client, workflowId) };
}

const textOf = (e: AgentEvent) =>
  "message" in e && e.message.role === "assistant"
    ? e.message.content.map((c) => (c.type === "text" ? c.text : "")).join("")
    : "";

describe.each(["createAgentWorker", "plugin"] as const)("a worker built with %s", (kind) => {
  it("serves token deltas, live, to handle.events() in another process", async () => {
    const token = randomBytes(16).toString("hex");
    const taskQueue = uniqueId(`library-${kind}`);
    const worker = await libraryWorker(kind, taskQueue, token);
    try {
      const run = await within(followRun(taskQueue, worker.model, token), 120_000, "the followed run");
      const deltas = run.events.filter((e) => e.type === "message_update");
      // Deltas arrived while the run was still streaming, each partial longer than the one before.
      expect(deltas.length).toBeGreaterThan(5);
      expect(run.statusAtFirstDelta).toBe("RUNNING");
      const lengths = deltas.map(textOf).map((t) => t.length);
      expect(lengths).toEqual([...lengths].sort((a, b) => a - b));
      expect(textOf(run.events.filter((e) => e.type === "message_end").at(-1)!)).toMatch(/^Sentence 0 .*Sentence 11 /);
      // Its run server is on loopback, announced in the run's history (and, for createAgentWorker, on the handle).
      expect(run.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      if (kind === "createAgentWorker") expect(run.url).toBe(worker.url);
    } finally {
      expect(await within(worker.stop(), 60_000, "worker drained")).toBe(0);
    }
  }, 240_000);
});
