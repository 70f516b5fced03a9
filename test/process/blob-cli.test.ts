/**
 * The CLIs read runs whose payloads are in a blob store (issue 56): `show` and `replay` with the workers'
 * JAI_BLOB_STORE (and codec keys) see the whole 1 MB tool result, `replay --file` too from a downloaded history;
 * `replay` without the store, or with one that lost the run's blobs, exits 2 saying so (nothing to judge), never a
 * false divergence; `npm run blobs -- stats` counts the store. A worker in the test process, the CLIs as child processes.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@temporalio/client";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { AesGcmCodec } from "../../src/node/codec/aes-gcm.js";
import { parseCodecKeys, withEncryptedFailures } from "../../src/node/codec/config.js";
import { blobStorage } from "../../src/node/blobs/config.js";
import { FileBlobDriver } from "../../src/node/blobs/drivers.js";
import { findTemporalCli } from "../../src/node/dev-server.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { sharedBundle } from "../support/bundles.js";
import { nodeEntry } from "../support/entry.js";
import { repoRoot } from "../support/service/processes.js";
import { fauxModel, openTestEnv, testWorker, uniqueId, within, type TestEnv } from "../support/helpers.js";

const KEYS = "b1:" + Buffer.alloc(32, 4).toString("base64");
const MB = 1024 * 1024;
const text = `head\n${"x".repeat(MB)}\nTAIL-of-the-result`;

let env: TestEnv;
let dir: string;
beforeAll(async () => {
  env = await openTestEnv();
  dir = mkdtempSync(path.join(os.tmpdir(), "jai-blob-cli-"));
}, 120_000);
afterAll(async () => {
  await env?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cli(script: string, args: string[], extra: Record<string, string>) {
  const run = spawnSync(process.execPath, [...nodeEntry(path.join(repoRoot, "src/cli", script)), ...args], {
    cwd: repoRoot,
    env: { ...process.env, NODE_OPTIONS: "", JAI_CODEC_KEYS: KEYS, JAI_BLOB_STORE: "", ...extra },
    encoding: "utf8",
    timeout: 120_000,
  });
  return { code: run.status, out: `${run.stdout}\n${run.stderr}` };
}

describe("the CLIs with a blob store", () => {
  it("show and replay read the whole result through the store; without it replay exits 2 naming it", async () => {
    const codec = new AesGcmCodec({ keys: parseCodecKeys(KEYS, "test") });
    const driver = new FileBlobDriver(dir);
    const dataConverter = { payloadCodecs: [codec], externalStorage: blobStorage(driver) };
    const tool: AgentTool = {
      name: "dump",
      description: "a 1 MB result",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text }] }),
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("dump", {}, { id: "d1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [tool], {
      dataConverter,
      workflowBundle: await sharedBundle("encrypted-failures"),
    });
    const client = new Client({
      connection: env.client.connection,
      dataConverter: withEncryptedFailures(dataConverter),
    });
    const workflowId = uniqueId("blob-cli");
    const handle = await startAgentRun(client, { taskQueue, workflowId, model: faux.getModel(), prompt: "dump it" });
    const result = await worker.runUntil(within(handle.result(), 60_000, "the run"));
    expect(
      result.messages.some((m) => m.role === "toolResult" && JSON.stringify(m).includes("TAIL-of-the-result")),
    ).toBe(true);
    const address = ["--address", process.env.TEMPORAL_ADDRESS!];
    const store = { JAI_BLOB_STORE: `file:${dir}` };

    const show = cli("show.ts", [workflowId, ...address], store);
    expect(show.code).toBe(0);
    expect(show.out).toContain(`✓ dump (d1): head`);
    expect(show.out).toContain(`(${text.length} chars)`); // the whole result, not the 50 KB cut

    const replay = cli("replay.ts", [workflowId, ...address], store);
    expect(replay.out).toMatch(/deterministic/);
    expect(replay.code).toBe(0);

    const without = cli("replay.ts", [workflowId, ...address], {});
    expect(without.code).toBe(2);
    expect(without.out).toMatch(
      /cannot read its stored payloads: .*external blob store \(driver jai\.file\).*set JAI_BLOB_STORE/,
    );

    // A downloaded history (as `temporal workflow show --output json` prints it: claims, no payloads) replays from
    // its file with the store reachable, and says what is missing without it.
    const temporal = findTemporalCli({ allowBuild: false });
    if (!temporal) throw new Error("the Temporal CLI is needed (npm run ensure-temporal)");
    const shown = spawnSync(
      temporal,
      ["workflow", "show", "--workflow-id", workflowId, "--output", "json", ...address],
      {
        encoding: "utf8",
        maxBuffer: 64 * MB,
      },
    );
    expect(shown.status).toBe(0);
    expect(shown.stdout).not.toContain("TAIL-of-the-result");
    const file = path.join(dir, "downloaded.json");
    writeFileSync(file, shown.stdout);
    const fromFile = cli("replay.ts", ["--file", file], store);
    expect(fromFile.out).toMatch(/deterministic/);
    expect(fromFile.code).toBe(0);
    const fromFileWithout = cli("replay.ts", ["--file", file], {});
    expect(fromFileWithout.code).toBe(2);
    expect(fromFileWithout.out).toMatch(/cannot read its stored payloads: .*set JAI_BLOB_STORE/);

    const empty = mkdtempSync(path.join(os.tmpdir(), "jai-blob-cli-empty-"));
    try {
      const lost = cli("replay.ts", [workflowId, ...address], { JAI_BLOB_STORE: `file:${empty}` });
      expect(lost.code).toBe(2);
      expect(lost.out).toContain(`of workflow "${workflowId}"`);
      expect(lost.out).toContain("is not in the blob store");
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }

    const stats = cli("blobs.ts", ["stats"], store);
    expect(stats.code).toBe(0);
    expect(stats.out).toMatch(new RegExp(`${dir}: \\d+ blobs, \\d+ bytes`));
  }, 240_000);
});
