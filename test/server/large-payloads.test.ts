/**
 * Tool results of any size stay durable (issue 56): with a blob store (Temporal External Storage) and the codec,
 * a run whose tools return a 5 MB file and a 3 MB image completes; the transcript holds both whole while the
 * model's context holds what the limits allow; the run's history stays under 1 MB and holds no plaintext, nor
 * does the store; `show`'s reader rebuilds the whole transcript; a lost blob is a typed error naming the run and
 * the claim; the fetched history replays with the store and fails clearly without it. Real server, faux model.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@temporalio/client";
import proto from "@temporalio/proto";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { AesGcmCodec } from "../../src/node/codec/aes-gcm.js";
import { parseCodecKeys, withEncryptedFailures } from "../../src/node/codec/config.js";
import { decodeHistoryPayloads } from "../../src/node/codec/history.js";
import { blobStorage, BlobStoreNotConfiguredError, claimDrivers } from "../../src/node/blobs/config.js";
import { BlobNotFoundError, FileBlobDriver } from "../../src/node/blobs/drivers.js";
import { sweepBlobs } from "../../src/node/blobs/sweep.js";
import { readStory } from "../../src/client/history-view.js";
import { storyTranscript } from "../../src/client/history-story.js";
import { replayHistory } from "../../src/worker/replay.js";
import { DEFAULT_LIMITS } from "../../src/worker/activities/result-limits.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { sharedBundle } from "../support/bundles.js";
import {
  deferred,
  fauxModel,
  openTestEnv,
  testWorker,
  textOf,
  uniqueId,
  within,
  type TestEnv,
} from "../support/helpers.js";

const MB = 1024 * 1024;
const KEY = "k1:" + Buffer.alloc(32, 9).toString("base64");
const SENTINEL = `BIGSNTL${Date.now().toString(36)}`;

let env: TestEnv;
let dir: string;
let bundle: { code: string };
const codec = new AesGcmCodec({ keys: parseCodecKeys(KEY, "test") });
let driver: FileBlobDriver;
let client: Client;

beforeAll(async () => {
  env = await openTestEnv();
  bundle = await sharedBundle("encrypted-failures");
  dir = mkdtempSync(path.join(os.tmpdir(), "jai-large-"));
  driver = new FileBlobDriver(dir);
  client = new Client({
    connection: env.client.connection,
    dataConverter: withEncryptedFailures({ payloadCodecs: [codec], externalStorage: blobStorage(driver) }),
  });
}, 120_000);

afterAll(async () => {
  await env?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// 5 MB of lines and a 3 MB "image", each with the sentinel that must not appear in plain text anywhere stored.
const file = `${SENTINEL}-file\n${"0123456789abcdef "
  .repeat(64)
  .concat("\n")
  .repeat(Math.ceil((5 * MB) / 1089))}`;
const image = `${SENTINEL}${"QUJD".repeat((3 * MB) / 4)}`;

const tools: AgentTool[] = [
  {
    name: "read_file",
    description: "Reads a big file",
    parameters: Type.Object({}),
    execute: async () => ({ content: [{ type: "text", text: file }], details: { path: "/big.log" } }),
  },
  {
    name: "screenshot",
    description: "Takes a big screenshot",
    parameters: Type.Object({}),
    fast: true,
    execute: async () => ({ content: [{ type: "image", data: image, mimeType: "image/png" }] }),
  },
];

/** Files of the store, and whether any holds `text`. */
function storeHolds(text: string): { files: number; found: boolean } {
  let files = 0;
  let found = false;
  for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (!/[0-9a-f]{64}$/.test(f)) continue;
    files++;
    if (readFileSync(path.join(dir, f)).includes(Buffer.from(text))) found = true;
  }
  return { files, found };
}

describe("another worker serves the model call after the one that ran the tool stopped", () => {
  it("it reads the context (the model's cut copy) from the workflow, whose worker reads the result from the store", async () => {
    const toolRan = deferred();
    const gated: AgentTool = {
      ...tools[0],
      execute: async () => {
        toolRan.resolve();
        return { content: [{ type: "text", text: file }] };
      },
    };
    let seen = 0;
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("read_file", {}, { id: "f1" })], { stopReason: "toolUse" }),
      (context: Context) => {
        const result = context.messages.find((m) => m.role === "toolResult");
        seen = result ? Buffer.byteLength(textOf(result)) : -1;
        return fauxAssistantMessage("read it elsewhere");
      },
    ]);
    const options = {
      dataConverter: { payloadCodecs: [codec], externalStorage: blobStorage(driver) },
      workflowBundle: bundle,
      routeModelCalls: false,
    };
    const first = await testWorker(env, [gated], options);
    const handle = await startAgentRun(client, {
      taskQueue: first.taskQueue,
      workflowId: uniqueId("large-elsewhere"),
      model: faux.getModel(),
      prompt: "read the log",
      tools: ["read_file"],
    });
    // The first worker runs the tool and stops (its in-flight call completes first): it never sees turn 2.
    await first.worker.runUntil(within(toolRan.promise, 60_000, "the tool to run"));
    const second = await testWorker(env, [gated], { ...options, taskQueue: first.taskQueue });
    const result = await second.worker.runUntil(within(handle.result(), 60_000, "the run to complete"));
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe("read it elsewhere");
    expect(seen).toBeGreaterThan(0);
    expect(seen).toBeLessThan(DEFAULT_LIMITS.maxBytes + 1024);
    expect(second.worker.cacheStats().misses).toBeGreaterThanOrEqual(1);
    expect(result.messages.find((m) => m.role === "toolResult")?.content).toEqual([{ type: "text", text: file }]);
  }, 180_000);
});

describe("a run whose tools return a 5 MB file and a 3 MB image, with a blob store and the codec", () => {
  let workflowId: string;
  let history: proto.temporal.api.history.v1.IHistory;

  it("completes; the transcript holds both whole, the model saw what the limits allow; history < 1 MB, no plaintext", async () => {
    const seen: { text: number; image: string[] }[] = [];
    const faux = fauxModel([
      fauxAssistantMessage(
        [fauxToolCall("read_file", {}, { id: "f1" }), fauxToolCall("screenshot", {}, { id: "s1" })],
        {
          stopReason: "toolUse",
        },
      ),
      (context: Context) => {
        for (const m of context.messages)
          if (m.role === "toolResult")
            seen.push({
              text: m.content.reduce((n, c) => n + (c.type === "text" ? Buffer.byteLength(c.text) : 0), 0),
              image: m.content.flatMap((c) => (c.type === "image" ? [c.mimeType] : [])),
            });
        return fauxAssistantMessage("read them");
      },
    ]);
    const { worker, taskQueue } = await testWorker(env, tools, {
      dataConverter: { payloadCodecs: [codec], externalStorage: blobStorage(driver) },
      workflowBundle: bundle,
    });
    workflowId = uniqueId("large-payloads");
    const handle = await startAgentRun(client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "read the log and take a screenshot",
      tools: ["read_file", "screenshot"],
    });
    const result = await worker.runUntil(within(handle.result(), 120_000, "the run to complete"));
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe("read them");

    // The transcript: both whole.
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => m.toolName)).toEqual(["read_file", "screenshot"]);
    expect(results[0].content).toEqual([{ type: "text", text: file }]);
    expect(results[0].details).toEqual({ path: "/big.log" });
    expect(results[1].content).toEqual([{ type: "image", data: image, mimeType: "image/png" }]);

    // The model: the file cut to the limits with the note, the image a note (over maxImageBytes).
    expect(seen).toHaveLength(2);
    expect(seen[0].text).toBeLessThan(DEFAULT_LIMITS.maxBytes + 1024);
    expect(seen[1]).toEqual({ text: expect.any(Number), image: [] });

    // History: claims, not payloads; under 1 MB; no sentinel in plain text.
    history = await client.workflow.getHandle(workflowId).fetchHistory();
    const bytes = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish());
    expect(bytes.length).toBeLessThan(MB);
    expect(bytes.includes(Buffer.from(SENTINEL))).toBe(false);
    expect(claimDrivers(history)).toEqual([driver.name]);
    // The store: what it holds is ciphertext.
    const store = storeHolds(SENTINEL);
    expect(store.files).toBeGreaterThanOrEqual(2);
    expect(store.found).toBe(false);
  }, 180_000);

  it("show's reader rebuilds the whole transcript from history through the store", async () => {
    const story = await readStory(client, workflowId);
    const transcript = storyTranscript(story);
    const results = transcript.filter((m) => m.role === "toolResult");
    expect(results.map((m) => (m.content[0] as { text?: string; data?: string }).text ?? "")).toContain(file);
    expect(results.some((m) => m.content.some((c) => c.type === "image" && c.data === image))).toBe(true);
  }, 60_000);

  it("replays from its fetched history with the store; without it or with the blobs gone, a clear error", async () => {
    const copy = () =>
      proto.temporal.api.history.v1.History.decode(proto.temporal.api.history.v1.History.encode(history).finish());
    const decoded = await decodeHistoryPayloads(copy(), [codec], blobStorage(driver));
    const outcome = await replayHistory(decoded, workflowId, await sharedBundle());
    expect(outcome.error).toBeUndefined();
    expect(outcome.events).toBeGreaterThan(10);

    // As downloaded, without reading the store first: refused naming the store, not Temporal's TMPRL1105.
    await expect(replayHistory(copy(), workflowId, await sharedBundle())).rejects.toThrow(
      /payloads are in an external blob store \(driver jai\.file\)/,
    );
    await expect(decodeHistoryPayloads(copy(), [codec])).rejects.toBeInstanceOf(BlobStoreNotConfiguredError);
    await expect(decodeHistoryPayloads(copy(), [codec])).rejects.toThrow(/set JAI_BLOB_STORE/);
    const elsewhere = mkdtempSync(path.join(os.tmpdir(), "jai-empty-"));
    try {
      const err = (await decodeHistoryPayloads(copy(), [codec], blobStorage(new FileBlobDriver(elsewhere))).catch(
        (e: unknown) => e,
      )) as BlobNotFoundError;
      expect(err).toBeInstanceOf(BlobNotFoundError);
      expect(err.workflowId).toBe(workflowId);
      expect(err.message).toContain(`workflow "${workflowId}"`);
      expect(err.message).toContain(elsewhere);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  }, 120_000);

  it("the sweeper keeps the blobs of runs Temporal has, and removes those of runs it no longer has", async () => {
    const ghost = uniqueId("swept");
    await driver.store({ target: { kind: "workflow", namespace: "default", id: ghost } }, [
      { metadata: { encoding: Buffer.from("json/plain") }, data: Buffer.from('"gone"') },
    ]);
    const removed: string[] = [];
    // Too recent: kept whatever Temporal says (a start stores its input before the workflow exists).
    expect((await sweepBlobs(client, driver)).removed).toEqual([]);
    const dry = await sweepBlobs(client, driver, { minAgeMs: 0, dryRun: true });
    expect(dry.removed.map((o) => o.workflowId)).toEqual([ghost]);
    expect(await driver.stats()).toMatchObject({ blobs: expect.any(Number) });
    const report = await sweepBlobs(client, driver, { minAgeMs: 0, onRemove: (o) => removed.push(o.workflowId) });
    expect(removed).toEqual([ghost]);
    expect(report.freed.blobs).toBe(1);
    expect(report.kept).toBeGreaterThanOrEqual(1);
    // The run's own blobs are still there: its transcript still reads.
    expect(storyTranscript(await readStory(client, workflowId)).length).toBeGreaterThan(2);
  }, 60_000);

  it("a lost blob: the client's result() is a BlobNotFoundError naming the run and the claim, at once", async () => {
    const removed = await driver.removeOwner({ namespace: "default", workflowId });
    expect(removed.blobs).toBeGreaterThanOrEqual(2);
    const err = (await within(client.workflow.getHandle(workflowId).result(), 30_000, "result() to fail").catch(
      (e: unknown) => e,
    )) as BlobNotFoundError;
    expect(err).toBeInstanceOf(BlobNotFoundError);
    expect(err.code).toBe("JAI_BLOB_NOT_FOUND");
    expect(err.workflowId).toBe(workflowId);
    expect(err.message).toMatch(/claim \{"key":"[0-9a-f]{64}"/);
  }, 60_000);
});
