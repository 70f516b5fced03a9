/**
 * A worker SIGKILLed while it stores a payload in the folder blob store (issue 56, "a SIGKILL mid-offload"): no
 * blob under a key ever holds a partial payload (each is written to a temporary file, synced and renamed), every
 * claim handed out before the kill reads back whole, the store takes the same payloads again, and the sweeper's
 * removal of the run takes the leftover temporary files with it.
 */
import { afterAll, describe, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { StorageDriverClaim } from "@temporalio/common";
import { FileBlobDriver } from "../../src/node/blobs/drivers.js";
import { nodeEntry } from "../support/entry.js";
import { repoRoot } from "../support/service/processes.js";
import { within } from "../support/helpers.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "jai-blob-kill-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("SIGKILL mid-offload", () => {
  it("leaves no partial blob under a key; what was stored before reads back whole; the sweeper clears the rest", async () => {
    const child = spawn(process.execPath, [...nodeEntry("test/fixtures/blob-store-child.ts"), dir, "24"], {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    const claims: Record<string, string>[] = [];
    let buffer = "";
    const twoStored = new Promise<void>((resolve) =>
      child.stdout.on("data", (chunk: Buffer) => {
        buffer += chunk.toString();
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        for (const line of lines) claims.push(JSON.parse(line) as Record<string, string>);
        if (claims.length >= 2) resolve();
      }),
    );
    await within(twoStored, 60_000, "two stores");
    // Mid-way through the next 24 MB write (a store takes ~100 ms here): killed as a worker would be.
    await new Promise((r) => setTimeout(r, 40));
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));

    const files = readdirSync(dir, { recursive: true, encoding: "utf8" }).map((f) => path.join(dir, f));
    const blobs = files.filter((f) => /[0-9a-f]{64}$/.test(f));
    expect(blobs.length).toBeGreaterThanOrEqual(2);
    for (const f of blobs) expect(createHash("sha256").update(readFileSync(f)).digest("hex")).toBe(path.basename(f));
    const driver = new FileBlobDriver(dir);
    const back = await driver.retrieve(
      {},
      claims.map((c) => new StorageDriverClaim(c)),
    );
    expect(back.map((p) => p.data!.length)).toEqual(claims.map(() => 24 * 1024 * 1024 + 0));
    // The same payload again (a retried activity): the same claim, nothing new.
    const [again] = await driver.store(
      { target: { kind: "workflow", namespace: "default", id: "killed-mid-store", runId: "r" } },
      [back[0]],
    );
    expect(again.claimData.key).toBe(claims[0].key);
    const removed = await driver.removeOwner({ namespace: "default", workflowId: "killed-mid-store" });
    expect(removed.blobs).toBe(blobs.length);
    expect(readdirSync(dir, { recursive: true }).filter((f) => String(f).includes(".tmp"))).toEqual([]);
  }, 120_000);
});
