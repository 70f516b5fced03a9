/**
 * The worker as a process and as a plugin: the two-shell quickstart with the
 * plain Temporal CLI, Temporal's environment configuration (profile file, TLS,
 * API key), a user config module, health endpoints, a graceful drain on
 * SIGTERM, and AgentPlugin on a worker that has activities of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "@temporalio/worker";
import { fauxAssistantMessage, fauxToolCall } from "@jai/ai";
import { Type } from "@sinclair/typebox";
import { startAgentRun } from "../../src/client/client.js";
import { findTemporalCli } from "../../src/node/dev-server.js";
import { AgentPlugin } from "../../src/worker/plugin.js";
import { temporalTarget } from "../../src/node/connection.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, openTestEnv, textOf, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { repoRoot, withSharedBundle } from "../support/service/processes.js";
import { nodeEntry } from "../support/entry.js";

let env: TestEnv;
let dir: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  env = await openTestEnv();
  dir = mkdtempSync(path.join(os.tmpdir(), "jai-service-"));
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await env?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Proc {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** `npm run worker` without npm in between: the same entry point (test/support/entry.ts). */
async function startWorker(args: string[], extraEnv: Record<string, string | undefined>): Promise<Proc> {
  const child = spawn(process.execPath, [...nodeEntry(path.join(repoRoot, "src/cli/worker-main.ts")), ...args], {
    cwd: repoRoot,
    env: { ...process.env, NODE_OPTIONS: "", ...(await withSharedBundle(extraEnv)) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  await within(
    new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/^ready$/m.test(output)) resolve();
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      void exited.then((code) => reject(new Error(`worker exited ${code}: ${output}`)));
    }),
    60000,
    "the worker process to be ready",
  );
  return { child, output: () => output, exited };
}

describe("worker process", () => {
  it("two-shell quickstart: TEMPORAL_ADDRESS=… npm run worker, then `temporal workflow execute --type agentRun` completes", async () => {
    const taskQueue = uniqueId("quickstart");
    const worker = await startWorker(["--task-queue", taskQueue, "--health-port", "0"], {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    });
    const port = Number(/health on :(\d+)/.exec(worker.output())![1]);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ok: true, state: "RUNNING", taskQueue });
    expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);

    const cli = findTemporalCli({ allowBuild: false });
    expect(cli).toBeDefined();
    const input = JSON.stringify({ model: "demo/offline-scripted", prompt: "What is this project?" });
    const run = spawnSync(
      cli!,
      [
        "workflow",
        "execute",
        "--address",
        process.env.TEMPORAL_ADDRESS!,
        "--type",
        "agentRun",
        "--task-queue",
        taskQueue,
        "--workflow-id",
        uniqueId("cli"),
        "--input",
        input,
        "-o",
        "json",
      ],
      { encoding: "utf8", timeout: 60000 },
    );
    expect(run.status).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; result: { stopReason: string; turns: number } };
    expect(result.status).toBe("COMPLETED");
    expect(result.result).toMatchObject({ stopReason: "stop", turns: 3 });

    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    expect(worker.output()).toContain("drained");
  });

  it("routes a run's later model calls to the worker's own queue; --no-route-model-calls keeps them on the shared one", async () => {
    const queuesOfModelCalls = async (args: string[]) => {
      const taskQueue = uniqueId("route");
      const worker = await startWorker(["--task-queue", taskQueue, ...args], {
        TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      });
      const handle = await startAgentRun(env.client, {
        taskQueue,
        model: "demo/offline-scripted",
        prompt: "What is this?",
      });
      expect((await within(handle.result(), 60000, "the demo run")).stopReason).toBe("stop");
      worker.child.kill("SIGTERM");
      await worker.exited;
      const events = (await handle.workflow.fetchHistory()).events ?? [];
      const queues = events
        .map((e) => e.activityTaskScheduledEventAttributes)
        .filter((a) => a?.activityType?.name === "streamAssistantMessage")
        .map((a) => a!.taskQueue!.name!);
      return { taskQueue, queues };
    };
    const routed = await queuesOfModelCalls([]);
    expect(routed.queues.length).toBeGreaterThan(1);
    expect(routed.queues.slice(1).every((q) => q.startsWith(`${routed.taskQueue}@`))).toBe(true);
    const shared = await queuesOfModelCalls(["--no-route-model-calls"]);
    expect(shared.queues).toEqual(shared.queues.map(() => shared.taskQueue));
  });

  it("fast failover's settings, removed: its flag is refused and its environment named in a warning, both saying so; --max-replays is bounded", async () => {
    const taskQueue = uniqueId("removed");
    const flagged = await startWorker(["--task-queue", taskQueue, "--fast-failover"], {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    }).catch((err: Error) => err);
    expect(String(flagged)).toContain("--fast-failover: fast failover was removed");
    // A deployment that still sets its environment keeps serving while it is rolled: a warning names what it ignores.
    const worker = await startWorker(["--task-queue", taskQueue], {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
      JAI_FAST_FAILOVER: "on",
      JAI_FAILOVER_SECRET: "a-secret-that-is-not-printed",
      JAI_FAILOVER_LINKS: "",
    });
    expect(worker.output()).toContain(
      "JAI_FAST_FAILOVER, JAI_FAILOVER_SECRET ignored: fast failover was removed; Temporal's heartbeat and sticky queue timeouts",
    );
    expect(worker.output()).not.toContain("a-secret-that-is-not-printed");
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
    // The replay cap: one shared-queue task at least, fewer than the workflow task slots.
    const tooMany = await startWorker(["--task-queue", taskQueue, "--max-replays", "40"], {
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    }).catch((err: Error) => err);
    expect(String(tooMany)).toContain(
      "--max-replays (JAI_MAX_CONCURRENT_REPLAYS) must be from 1 to --max-workflow-tasks - 1 (39), got 40",
    );
  }, 120000);

  it("reads the connection from a temporal.toml profile, and what it serves from a config module", async () => {
    const toml = path.join(dir, "temporal.toml");
    writeFileSync(toml, `[profile.svc]\naddress = "${process.env.TEMPORAL_ADDRESS}"\nnamespace = "default"\n`);
    const config = path.join(dir, "jai.config.mjs");
    writeFileSync(
      config,
      `import { Type } from ${JSON.stringify(pathToFileURL(path.join(repoRoot, "node_modules/@sinclair/typebox/build/esm/index.mjs")).href)};
import { registerFauxProvider, fauxAssistantMessage, fauxToolCall } from ${JSON.stringify(pathToFileURL(path.join(repoRoot, "node_modules/@jai/ai/dist/index.js")).href)};
const faux = registerFauxProvider({ provider: "team", api: "team-scripted", models: [{ id: "echo" }] });
const answer = (context) => context.messages.some((m) => m.role === "toolResult")
  ? fauxAssistantMessage("echoed: " + context.messages.at(-1).content[0].text)
  : fauxAssistantMessage([fauxToolCall("shout", { text: "hello" })], { stopReason: "toolUse" });
faux.setResponses(Array.from({ length: 10 }, () => answer));
export default () => ({
  tools: [{ name: "shout", label: "shout", description: "upper-cases", parameters: Type.Object({ text: Type.String() }),
    async execute(_id, { text }) { return { content: [{ type: "text", text: text.toUpperCase() }] }; } }],
  models: [faux.getModel()],
  demoModel: false,
});
`,
    );
    const taskQueue = uniqueId("configured");
    const worker = await startWorker(["--task-queue", taskQueue, "--config", config], {
      TEMPORAL_ADDRESS: undefined,
      TEMPORAL_CONFIG_FILE: toml,
      TEMPORAL_PROFILE: "svc",
    });
    expect(worker.output()).toContain(`${process.env.TEMPORAL_ADDRESS} namespace "default" (plaintext)`);
    expect(worker.output()).toContain("tools: shout; models: team/echo,");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("configured"),
      model: "team/echo",
      prompt: "go",
    });
    const result = await within(handle.result(), 30000, "the configured run");
    expect(textOf(result.messages.at(-1))).toBe("echoed: HELLO");
    // demoModel: false is honoured.
    const demo = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("no-demo"),
      model: "demo/offline-scripted",
      prompt: "hi",
    });
    const failure = (await within(demo.result(), 30000, "the demo run").catch((err: unknown) => err)) as {
      cause?: { cause?: Error; message?: string };
    };
    expect(String(failure.cause?.cause?.message ?? failure.cause?.message)).toMatch(
      /unknown model "demo\/offline-scripted"/,
    );
    worker.child.kill("SIGTERM");
    expect(await worker.exited).toBe(0);
  });

  it("on SIGTERM an in-flight tool finishes (once) before the process exits 0; another worker completes the run", async () => {
    const log = path.join(dir, "slow.log");
    const config = path.join(dir, "slow.config.mjs");
    writeFileSync(
      config,
      `import { appendFileSync } from "node:fs";
import { registerFauxProvider, fauxAssistantMessage, fauxToolCall } from ${JSON.stringify(pathToFileURL(path.join(repoRoot, "node_modules/@jai/ai/dist/index.js")).href)};
const faux = registerFauxProvider({ provider: "team", api: "team-slow", models: [{ id: "slow" }] });
const answer = (context) => context.messages.some((m) => m.role === "toolResult")
  ? fauxAssistantMessage("tool said: " + context.messages.at(-1).content[0].text)
  : fauxAssistantMessage([fauxToolCall("slow", {})], { stopReason: "toolUse" });
faux.setResponses(Array.from({ length: 10 }, () => answer));
export default {
  tools: [{ name: "slow", label: "slow", description: "takes a while", parameters: { type: "object", properties: {} },
    async execute() {
      appendFileSync(${JSON.stringify(log)}, "started\\n");
      await new Promise((r) => setTimeout(r, 1500));
      appendFileSync(${JSON.stringify(log)}, "finished\\n");
      return { content: [{ type: "text", text: "finished" }] };
    } }],
  models: [faux.getModel()],
};
`,
    );
    const taskQueue = uniqueId("drain");
    const env1 = { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS };
    const first = await startWorker(["--task-queue", taskQueue, "--config", config, "--shutdown-grace", "20s"], env1);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("drain"),
      model: "team/slow",
      prompt: "go",
    });
    const deadline = Date.now() + 30000;
    while (!(existsSync(log) && readFileSync(log, "utf8").includes("started"))) {
      if (Date.now() > deadline) throw new Error("the tool never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    expect(readFileSync(log, "utf8")).toBe("started\nfinished\n");
    const second = await startWorker(["--task-queue", taskQueue, "--config", config], env1);
    const result = await within(handle.result(), 60000, "the drained run");
    expect(textOf(result.messages.at(-1))).toBe("tool said: finished");
    expect(readFileSync(log, "utf8")).toBe("started\nfinished\n");
    second.child.kill("SIGTERM");
    expect(await second.exited).toBe(0);
  });
});

describe("Temporal environment configuration", () => {
  it("maps TLS client cert paths to mTLS, an API key to TLS, and lets flags win", () => {
    const cert = path.join(dir, "client.pem");
    const key = path.join(dir, "client.key");
    writeFileSync(cert, "CERT");
    writeFileSync(key, "KEY");
    const mtls = temporalTarget({
      TEMPORAL_ADDRESS: "temporal.internal:7233",
      TEMPORAL_NAMESPACE: "agents",
      TEMPORAL_TLS_CLIENT_CERT_PATH: cert,
      TEMPORAL_TLS_CLIENT_KEY_PATH: key,
      HOME: dir,
    });
    expect(mtls.describe).toBe('temporal.internal:7233 namespace "agents" (mTLS)');
    const tls = mtls.connectionOptions.tls as { clientCertPair: { crt: Uint8Array; key: Uint8Array } };
    expect(Buffer.from(tls.clientCertPair.crt).toString()).toBe("CERT");
    const cloud = temporalTarget({
      TEMPORAL_ADDRESS: "ns.acct.tmprl.cloud:7233",
      TEMPORAL_NAMESPACE: "ns.acct",
      TEMPORAL_API_KEY: "secret",
      HOME: dir,
    });
    expect(cloud.connectionOptions).toMatchObject({ apiKey: "secret", tls: true });
    expect(cloud.describe).not.toContain("secret");
    expect(temporalTarget({ HOME: dir }, { address: "h:1" }).describe).toBe('h:1 namespace "default" (plaintext)');
    expect(() => temporalTarget({ TEMPORAL_CONFIG_FILE: path.join(dir, "missing.toml"), HOME: dir })).toThrow(
      /Temporal environment configuration/,
    );
  });
});

describe("AgentPlugin", () => {
  it("adds agent runs to a worker that has activities of its own", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("add", { a: 2, b: 3 })], { stopReason: "toolUse" }),
      fauxAssistantMessage("five"),
    ]);
    const add: AgentTool<any> = {
      name: "add",
      label: "add",
      description: "adds",
      parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
      async execute(_id, { a, b }) {
        return { content: [{ type: "text", text: String(a + b) }] };
      },
    };
    const taskQueue = uniqueId("plugin");
    const events: string[] = [];
    const worker = await Worker.create({
      connection: env.connection,
      taskQueue,
      activities: { teamActivity: async () => "mine" },
      plugins: [new AgentPlugin({ tools: [add], models: [faux.getModel()], onEvent: (e) => void events.push(e.type) })],
    });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("plugin"),
      model: `${faux.getModel().provider}/${faux.getModel().id}`,
      prompt: "2+3?",
    });
    const result = await worker.runUntil(within(handle.result(), 60000, "the plugin run"));
    expect(textOf(result.messages.at(-1))).toBe("five");
    expect(result.messages.some((m) => m.role === "toolResult" && textOf(m) === "5")).toBe(true);
    expect(events).toContain("agent_end");
  });

  it("refuses an activity name clash instead of silently replacing the team's activity", async () => {
    await expect(
      Worker.create({
        connection: env.connection,
        taskQueue: uniqueId("clash"),
        activities: { resolveRunSetup: async () => 1 },
        plugins: [new AgentPlugin()],
      }),
    ).rejects.toThrow(/already has an activity named "resolveRunSetup"/);
  });
});
