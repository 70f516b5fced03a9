/**
 * Proof in a real browser (issue 12): a run whose prompt holds a sentinel is
 * stored encrypted (the raw gRPC history has it in no payload), yet the
 * Temporal UI, pointed at the codec server, renders it, for a caller the
 * codec server authorizes; without the token the page shows ciphertext.
 * Screenshots: ui-without-codec.png, ui-with-codec.png in a temp folder (JAI_SCREENSHOTS=docs retakes docs/'s).
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { existsSync } from "node:fs";
import type { Server } from "node:http";
import { Client } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import proto from "@temporalio/proto";
import { fauxAssistantMessage } from "@jai/ai";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../scripts/chromium.js";
import { startAgentRun } from "../../src/client/client.js";
import { AesGcmCodec } from "../../src/node/codec/aes-gcm.js";
import { parseCodecKeys } from "../../src/node/codec/config.js";
import { bearerTokens, createCodecServer } from "../../src/http/codec-server.js";
import { freePort, startDevServer, type DevServer } from "../../src/node/dev-server.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxModel, uniqueId, within } from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";
import { screenshotPath } from "../support/screenshots.js";
import { connectTestClient } from "../support/client-connection.js";

const TOKEN = "ui-test-token";
const codec = new AesGcmCodec({ keys: parseCodecKeys("ui:" + Buffer.alloc(32, 7).toString("base64"), "test") });

let server: DevServer;
let codecServer: Server;
let codecUrl: string;
let browser: Browser;

beforeAll(async () => {
  try {
    Runtime.install({ logger: new DefaultLogger("WARN") });
  } catch {
    // Already installed in this process.
  }
  const uiPort = await freePort();
  codecServer = await createCodecServer({
    codecs: [codec],
    origins: [`http://127.0.0.1:${uiPort}`],
    authorize: bearerTokens([TOKEN]),
    port: 0,
  });
  codecUrl = `http://127.0.0.1:${(codecServer.address() as { port: number }).port}`;
  server = await startDevServer({ uiPort, uiCodecEndpoint: codecUrl });
  browser = await launchChromium();
}, 120000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
  codecServer?.close();
});

/** The text the UI renders for a run, once `needle` shows in it (the UI decodes after the page loads). */
async function pageText(url: string, headers: Record<string, string>, shot: string, needle: string): Promise<string> {
  const context = await browser.newContext({ extraHTTPHeaders: headers, viewport: { width: 1400, height: 1000 } });
  try {
    const page = await context.newPage();
    await page.goto(url, { waitUntil: "networkidle", timeout: 60000 });
    await page
      .waitForFunction(
        (n) =>
          (globalThis as unknown as { document: { body: { innerText: string } } }).document.body.innerText.includes(n),
        needle,
        { timeout: 30000 },
      )
      .catch(() => undefined);
    const file = screenshotPath(shot);
    await page.screenshot({ path: file, fullPage: true });
    expect(existsSync(file)).toBe(true);
    return await page.locator("body").innerText();
  } finally {
    await context.close();
  }
}

describe("the Temporal UI through the codec server", () => {
  it("the raw history holds no sentinel; the UI shows it only through the authorized codec server", async () => {
    const sentinel = `UISENTINEL${Date.now().toString(36)}`;
    const connection = await NativeConnection.connect({ address: server.address });
    const clientConnection = await connectTestClient(server.address);
    try {
      const dataConverter = { payloadCodecs: [codec] };
      const client = new Client({ connection: clientConnection, dataConverter });
      const faux = fauxModel([fauxAssistantMessage(`The answer is ${sentinel}-answer`)]);
      const worker = await createAgentWorker({
        connection,
        taskQueue: uniqueId("ui"),
        workflowBundle: await sharedBundle("encrypted-failures"),
        dataConverter,
      });
      const handle = await startAgentRun(client, {
        taskQueue: worker.taskQueue,
        workflowId: uniqueId("ui-run"),
        model: faux.getModel(),
        prompt: `Tell me about ${sentinel}-prompt`,
      });
      const result = await worker.runUntil(() => within(handle.result(), 60000, "result"));
      expect(JSON.stringify(result)).toContain(sentinel);

      // What Temporal stores, read over gRPC with no codec: the sentinel is in no event at all.
      const raw = new Client({ connection: clientConnection });
      const history = await raw.workflow.getHandle(handle.workflowId).fetchHistory();
      const leaks = (history.events ?? []).filter((e) =>
        Buffer.from(proto.temporal.api.history.v1.HistoryEvent.encode(e).finish()).includes(sentinel),
      );
      expect(leaks.map((e) => e.eventId)).toEqual([]);

      const { runId } = await handle.workflow.describe();
      const url = `${server.uiUrl}/namespaces/default/workflows/${handle.workflowId}/${runId}/history`;
      // No token: the codec server refuses (401) and the UI shows the payloads as stored, "binary/encrypted" in base64.
      const encrypted = Buffer.from("binary/encrypted").toString("base64");
      const denied = await pageText(url, {}, "ui-without-codec.png", encrypted);
      expect(denied).toContain(handle.workflowId); // the page did load the run
      expect(denied).toContain(encrypted);
      expect(denied).not.toContain(sentinel);
      const shown = await pageText(
        url,
        { Authorization: `Bearer ${TOKEN}` },
        "ui-with-codec.png",
        `${sentinel}-prompt`,
      );
      expect(shown).toContain(`${sentinel}-prompt`);
    } finally {
      await connection.close();
      await clientConnection.close();
    }
  }, 240000);
});
