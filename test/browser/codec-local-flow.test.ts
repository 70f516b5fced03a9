/**
 * The local encryption flow as docs/encryption.md gives it (issue #38 row 4): with JAI_CODEC_KEYS set,
 * `npm run temporal` and `npm run codec-server` (the real CLIs, from one folder, no flags but ports) and a run
 * encrypted by a worker with those keys; headless Chromium opens the run in the dev server's UI with no
 * injected header, as a person's browser would, and sees plaintext. A page on another origin, in the same
 * browser, gets nothing from the tokenless codec server: its fetch is blocked, its no-cors post and its form
 * post are refused (403) before any decryption.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { Client } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import { fauxAssistantMessage } from "@jai/ai";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../scripts/chromium.js";
import { startAgentRun } from "../../src/client/client.js";
import { dataConverterFromEnv } from "../../src/node/codec/config.js";
import { freePort } from "../../src/node/dev-server.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxModel, uniqueId, within } from "../support/helpers.js";
import { repoRoot } from "../support/service/processes.js";
import { sharedBundle } from "../support/bundles.js";
import { connectTestClient } from "../support/client-connection.js";

const KEYS = "local:" + Buffer.alloc(32, 9).toString("base64");
let cwd: string;
let grpcPort: number;
let uiPort: number;
let codecUrl: string;
let browser: Browser;
let attacker: Server;
let attackerUrl: string;
const children: ChildProcess[] = [];

interface Cli {
  child: ChildProcess;
  output(): string;
}

/**
 * `npm run <script>` as a person runs it in `cwd`: the CLI through tsx, with this environment minus anything
 * that would steer it (Temporal address, codec endpoint, tokens, origins), plus `env`.
 */
async function runCli(script: string, args: string[], env: Record<string, string>, ready: RegExp): Promise<Cli> {
  const steering = /^(TEMPORAL_ADDRESS|JAI_UI_CODEC_ENDPOINT|JAI_CODEC_)/;
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !steering.test(k))) as Record<
    string,
    string
  >;
  const tsx = pathToFileURL(path.join(repoRoot, "node_modules/tsx/dist/loader.mjs")).href;
  const child = spawn(process.execPath, ["--import", tsx, path.join(repoRoot, "src/cli", script), ...args], {
    cwd,
    env: { ...base, NODE_OPTIONS: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  const started = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) resolve();
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${script} exited ${code}: ${output}`)));
  });
  await within(started, 90000, `${script} to start`);
  return { child, output: () => output };
}

/** SIGTERM (so `npm run temporal` stops its dev server too), SIGKILL if it lingers. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  await within(exited, 20000, "exit").catch(() => child.kill("SIGKILL"));
}

beforeAll(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger("WARN") });
  } catch {
    // Already installed in this process.
  }
  cwd = mkdtempSync(path.join(os.tmpdir(), "jai-local-flow-"));
  [grpcPort, uiPort] = [await freePort(), await freePort()];
  const codecPort = await freePort();
  // The README's commands; the ports are the only change (the defaults may be taken on this machine).
  const env = { JAI_CODEC_KEYS: KEYS, JAI_CODEC_SERVER_PORT: String(codecPort) };
  const temporal = await runCli(
    "temporal.ts",
    ["--port", String(grpcPort), "--ui-port", String(uiPort)],
    env,
    /Press Ctrl-C/,
  );
  codecUrl = `http://127.0.0.1:${codecPort}`;
  // With keys set and no --ui-codec-endpoint, the UI is pointed at `npm run codec-server`'s address.
  expect(temporal.output()).toContain(
    `Web UI:              http://127.0.0.1:${uiPort} (decodes payloads with ${codecUrl})`,
  );
  const codec = await runCli("codec-server.ts", [], env, /codec server on/);
  // No token configured, on loopback: it serves the dev server's UI, whatever port that UI got.
  expect(codec.output()).toContain("no token: loopback peers only");
  expect(codec.output()).toContain(`http://127.0.0.1:${uiPort}`);

  attacker = createServer((_req, res) =>
    res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>another site</title>"),
  );
  await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
  attackerUrl = `http://localhost:${(attacker.address() as { port: number }).port}`;
  browser = await launchChromium();
}, 180000);

afterAll(async () => {
  await browser?.close();
  attacker?.close();
  for (const child of children.reverse()) await stop(child);
  if (cwd) rmSync(cwd, { recursive: true, force: true });
}, 60000);

describe("the local encryption flow in the Temporal UI", () => {
  it("npm run temporal + npm run codec-server: Chromium without injected headers shows the plaintext; another origin gets nothing", async () => {
    const sentinel = `LOCALFLOW${Date.now().toString(36)}`;
    const address = `127.0.0.1:${grpcPort}`;
    const connection = await NativeConnection.connect({ address });
    const clientConnection = await connectTestClient(address);
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    try {
      const dataConverter = dataConverterFromEnv({ JAI_CODEC_KEYS: KEYS })!;
      const client = new Client({ connection: clientConnection, dataConverter });
      const worker = await createAgentWorker({
        connection,
        taskQueue: uniqueId("local-flow"),
        workflowBundle: await sharedBundle("encrypted-failures"),
        dataConverter,
      });
      const handle = await startAgentRun(client, {
        taskQueue: worker.taskQueue,
        workflowId: uniqueId("local-flow-run"),
        model: fauxModel([fauxAssistantMessage(`The answer is ${sentinel}-answer`)]).getModel(),
        prompt: `Tell me about ${sentinel}-prompt`,
      });
      await worker.runUntil(() => within(handle.result(), 60000, "result"));
      const { runId } = await handle.workflow.describe();

      // The person's browser: nothing added to its requests.
      const page = await context.newPage();
      const decodes: Promise<{ authorization?: string; origin?: string; status: number }>[] = [];
      page.on("response", (r) => {
        // allHeaders: what went on the wire, Origin included (headers() leaves out what the network stack adds).
        if (r.url().startsWith(`${codecUrl}/decode`) && r.request().method() === "POST")
          decodes.push(
            r
              .request()
              .allHeaders()
              .then((h) => ({ authorization: h.authorization, origin: h.origin, status: r.status() })),
          );
      });
      const ui = `http://127.0.0.1:${uiPort}`;
      await page.goto(`${ui}/namespaces/default/workflows/${handle.workflowId}/${runId}/history`, {
        waitUntil: "networkidle",
        timeout: 60000,
      });
      await page
        .waitForFunction(
          (n) =>
            (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText.includes(
              n,
            ),
          `${sentinel}-prompt`,
          { timeout: 30000 },
        )
        .catch(() => undefined);
      const text = await page.locator("body").innerText();
      expect(text).toContain(handle.workflowId);
      expect(text).toContain(`${sentinel}-prompt`);
      expect(text).not.toMatch(/could not connect/i);
      expect(text).not.toContain(Buffer.from("binary/encrypted").toString("base64"));
      expect(decodes.length).toBeGreaterThan(0);
      for (const d of await Promise.all(decodes))
        expect(d).toEqual({ authorization: undefined, origin: ui, status: 200 });

      // A page on another origin in the same browser, trying the tokenless codec server with a stored payload.
      const [sealed] = await dataConverter.payloadCodecs![0].encode([
        { metadata: { encoding: Buffer.from("json/plain") }, data: Buffer.from(JSON.stringify(sentinel)) },
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
      const evil = await context.newPage();
      const seen: { method: string; status: number }[] = [];
      evil.on("response", (r) => {
        if (r.url().startsWith(codecUrl)) seen.push({ method: r.request().method(), status: r.status() });
      });
      await evil.goto(attackerUrl);
      const got = await evil.evaluate(
        async ({ codec, body }) => {
          const out: Record<string, string> = {};
          try {
            const r = await fetch(`${codec}/decode`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body,
            });
            out.cors = `read: ${await r.text()}`;
          } catch (err) {
            out.cors = `blocked: ${(err as Error).message}`;
          }
          const opaque = await fetch(`${codec}/decode`, {
            method: "POST",
            mode: "no-cors",
            headers: { "content-type": "text/plain" },
            body,
          });
          out.noCors = `${opaque.type}:${await opaque.text()}`;
          return out;
        },
        { codec: codecUrl, body },
      );
      expect(got).toEqual({ cors: expect.stringMatching(/^blocked/), noCors: "opaque:" });
      // A form post (a navigation, no preflight) into a frame: refused by Origin before the body is read.
      const formAnswer = evil.waitForResponse((r) => r.url() === `${codecUrl}/decode`);
      await evil.evaluate(
        ({ codec, body }) => {
          const d = (globalThis as unknown as { document: any }).document;
          d.body.innerHTML = `<iframe name="sink"></iframe><form method="POST" enctype="text/plain" target="sink"><input name='${body.slice(0, -2)}' value='"}'></form>`;
          const form = d.querySelector("form");
          form.action = `${codec}/decode`;
          form.submit();
        },
        { codec: codecUrl, body },
      );
      expect((await formAnswer).status()).toBe(403);
      expect(seen.filter((s) => s.method === "POST").map((s) => s.status)).toEqual(expect.arrayContaining([403]));
      expect(seen.some((s) => s.status === 200)).toBe(false);
    } finally {
      await context.close();
      await connection.close();
      await clientConnection.close();
    }
  }, 240000);
});
