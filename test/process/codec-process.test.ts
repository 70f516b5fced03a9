/**
 * The codec turned on by configuration (issue 12): a worker process with
 * JAI_CODEC_KEYS encrypts what it writes; one without the run's key says so
 * loudly, naming the run and the key, in its log and on /healthz; the
 * `codec-server` CLI serves the protocol with the same keys.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { Client } from "@temporalio/client";
import proto from "@temporalio/proto";
import { startAgentRun } from "../../src/client/client.js";
import { dataConverterFromEnv } from "../../src/node/codec/config.js";
import { freePort } from "../../src/node/dev-server.js";
import { openTestEnv, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { repoRoot } from "../support/service/processes.js";
import { nodeEntry } from "../support/entry.js";

const KEY_A = "A:" + Buffer.alloc(32, 11).toString("base64");
const KEY_B = "B:" + Buffer.alloc(32, 12).toString("base64");
let env: TestEnv;
const children: ChildProcess[] = [];
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await env?.close();
});

/** Starts a CLI from the sources (test/support/entry.ts); resolves once `ready` matches its output. */
async function start(script: string, args: string[], extraEnv: Record<string, string>, ready: RegExp) {
  const child = spawn(process.execPath, [...nodeEntry(path.join(repoRoot, "src/cli", script)), ...args], {
    cwd: repoRoot,
    env: { ...process.env, NODE_OPTIONS: "", ...extraEnv },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  const waiters: { re: RegExp; resolve: () => void }[] = [];
  const onData = (chunk: Buffer) => {
    output += chunk.toString();
    for (const w of waiters) if (w.re.test(output)) w.resolve();
  };
  child.stdout!.on("data", onData);
  child.stderr!.on("data", onData);
  const waitFor = (re: RegExp, what: string) =>
    within(
      new Promise<void>((resolve) => (re.test(output) ? resolve() : waiters.push({ re, resolve }))),
      60000,
      `${what}: ${output}`,
    );
  await waitFor(ready, `${script} to start`);
  return { child, output: () => output, waitFor };
}

/** The exit code of `child`, once it has exited. */
const exitCode = (child: ChildProcess) =>
  child.exitCode !== null
    ? Promise.resolve(child.exitCode)
    : new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));

describe("codec by configuration", () => {
  it("worker processes with JAI_CODEC_KEYS: runs encrypted; a worker lacking the key names run and key in its log and /healthz, or terminates the run when told to", async () => {
    const clientA = new Client({
      connection: env.client.connection,
      dataConverter: dataConverterFromEnv({ JAI_CODEC_KEYS: KEY_A }),
    });
    const sentinel = `PROC${Date.now().toString(36)}`;
    const good = uniqueId("codec-proc");
    const worker = await start(
      "worker-main.ts",
      ["--task-queue", good],
      { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!, JAI_CODEC_KEYS: KEY_A, JAI_CODEC_COMPRESS: "1" },
      /^ready$/m,
    );
    expect(worker.output()).toContain("payload codec on");
    const handle = await startAgentRun(clientA, {
      taskQueue: good,
      workflowId: uniqueId("codec-proc-run"),
      model: "demo/offline-scripted",
      prompt: `${sentinel} what is here?`,
    });
    const result = await within(handle.result(), 60000, "result");
    expect(result.stopReason).toBe("stop");
    const raw = await env.client.workflow.getHandle(handle.workflowId).fetchHistory();
    expect(Buffer.from(proto.temporal.api.history.v1.History.encode(raw).finish()).includes(sentinel)).toBe(false);
    worker.child.kill("SIGTERM");

    const lacking = uniqueId("codec-lacking");
    const healthPort = await freePort();
    const blind = await start(
      "worker-main.ts",
      ["--task-queue", lacking, "--health-port", String(healthPort)],
      { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!, JAI_CODEC_KEYS: KEY_B },
      /^ready$/m,
    );
    const stuck = await startAgentRun(clientA, {
      taskQueue: lacking,
      workflowId: uniqueId("codec-stuck"),
      model: "demo/offline-scripted",
      prompt: "hello",
    });
    await blind.waitFor(/CANNOT DECRYPT run codec-stuck-/, "the missing-key log line");
    expect(blind.output()).toContain(
      `CANNOT DECRYPT run ${stuck.workflowId}: payload encrypted with key "A", which this process does not have (loaded: B)`,
    );
    const health = (await (await fetch(`http://127.0.0.1:${healthPort}/healthz`)).json()) as {
      undecryptableKeyIds?: string[];
    };
    expect(health.undecryptableKeyIds).toEqual(["A"]);
    await stuck.workflow.terminate("test over");
    blind.child.kill("SIGTERM");

    // JAI_CODEC_MISSING_KEY=terminate: the run ends at once, its status and reason naming the key.
    const strict = uniqueId("codec-strict");
    const ender = await start(
      "worker-main.ts",
      ["--task-queue", strict],
      { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS!, JAI_CODEC_KEYS: KEY_B, JAI_CODEC_MISSING_KEY: "terminate" },
      /^ready$/m,
    );
    const doomed = await startAgentRun(clientA, {
      taskQueue: strict,
      workflowId: uniqueId("codec-doomed"),
      model: "demo/offline-scripted",
      prompt: "hello",
    });
    await ender.waitFor(/Terminating the run/, "the terminate log line");
    const events = async () => (await env.client.workflow.getHandle(doomed.workflowId).fetchHistory()).events ?? [];
    let terminated = (await events()).find((e) => e.workflowExecutionTerminatedEventAttributes);
    for (let i = 0; !terminated && i < 100; i++) {
      await new Promise((r) => setImmediate(r));
      terminated = (await events()).find((e) => e.workflowExecutionTerminatedEventAttributes);
    }
    expect(terminated?.workflowExecutionTerminatedEventAttributes?.reason).toMatch(
      /^codec key "A" missing on worker .*which this process does not have \(loaded: B\)/,
    );
    expect((await doomed.workflow.describe()).status.name).toBe("TERMINATED");
    ender.child.kill("SIGTERM");
  }, 180000);

  it("npm run codec-server: decodes for a bearer token; refuses to start tokenless beyond loopback or with an unknown auth mode", async () => {
    const port = await freePort();
    const server = await start(
      "codec-server.ts",
      ["--port", String(port)],
      { JAI_CODEC_KEYS: KEY_A, JAI_CODEC_SERVER_TOKENS: "t0k" },
      /codec server on/,
    );
    expect(server.output()).toContain("keys A, current A");
    const codec = dataConverterFromEnv({ JAI_CODEC_KEYS: KEY_A })!.payloadCodecs![0];
    const [sealed] = await codec.encode([
      { metadata: { encoding: Buffer.from("json/plain") }, data: Buffer.from('"hi"') },
    ]);
    const body = JSON.stringify({
      payloads: [
        {
          metadata: Object.fromEntries(
            Object.entries(sealed.metadata!).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
          ),
          data: Buffer.from(sealed.data!).toString("base64"),
        },
      ],
    });
    const ok = await fetch(`http://127.0.0.1:${port}/decode`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: "Bearer t0k" },
      body,
    });
    expect(ok.status).toBe(200);
    const decoded = (await ok.json()) as { payloads: { data: string }[] };
    expect(Buffer.from(decoded.payloads[0].data, "base64").toString()).toBe('"hi"');
    server.child.kill("SIGTERM");
    // Without tokens it decrypts for loopback peers only, so beyond loopback it refuses to start (exit 2), naming the fix.
    const refused = await start(
      "codec-server.ts",
      ["--port", String(port), "--host", "0.0.0.0"],
      { JAI_CODEC_KEYS: KEY_A, JAI_CODEC_SERVER_TOKENS: "", JAI_CODEC_SERVER_AUTH: "" },
      /JAI_CODEC_SERVER_TOKENS/,
    );
    expect(refused.output()).toMatch(
      /codec-server: listening on 0\.0\.0\.0 needs tokens: .*set JAI_CODEC_SERVER_TOKENS/,
    );
    expect(await exitCode(refused.child)).toBe(2);
    const typo = await start(
      "codec-server.ts",
      ["--port", String(port)],
      { JAI_CODEC_KEYS: KEY_A, JAI_CODEC_SERVER_AUTH: "off" },
      /JAI_CODEC_SERVER_AUTH must be/,
    );
    expect(await exitCode(typo.child)).toBe(2);
  }, 120000);
});
