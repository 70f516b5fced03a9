/**
 * The blob store's file driver and its configuration (issue 56): content-addressed and idempotent, a claim that
 * names the run, a lost blob as a typed error naming run and claim, the environment's settings; and the result
 * limits as a policy: with a store a result is kept whole and the model gets the cut copy.
 */
import { describe, expect, it } from "@jest/globals";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { StorageDriverClaim, type Payload } from "@temporalio/common";
import {
  BlobCorruptError,
  BlobNotFoundError,
  FileBlobDriver,
  parseClaim,
  PostgresBlobDriver,
} from "../../src/node/blobs/drivers.js";
import {
  AgentBlobStorage,
  blobDriverFromSpec,
  blobStorageFromEnv,
  BlobStoreConfigError,
  BlobStoreNotConfiguredError,
  DEFAULT_MAX_RESULT_BYTES,
  parseBytes,
  resolvePayloadClaims,
  storedResultBytes,
} from "../../src/node/blobs/config.js";
import { dataConverterFromEnv } from "../../src/node/codec/config.js";
import { AesGcmCodec } from "../../src/node/codec/aes-gcm.js";
import { createCodecServer } from "../../src/http/codec-server.js";
import { DEFAULT_LIMITS, keepErrorText, keepToolResult } from "../../src/worker/activities/result-limits.js";
import { encodeReferencePayload } from "@temporalio/common/lib/internal-non-workflow/extstore-helpers.js";

const payload = (text: string): Payload => ({
  metadata: { encoding: Buffer.from("json/plain") },
  data: Buffer.from(JSON.stringify(text)),
});
const target = { kind: "workflow" as const, namespace: "default", id: "run/../1", runId: "r-1", type: "agentRun" };

function tempDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), "jai-blobs-"));
}

describe("FileBlobDriver", () => {
  it("stores under the SHA-256 of the bytes, idempotently, and reads back what it stored", async () => {
    const dir = tempDir();
    try {
      const driver = new FileBlobDriver(dir);
      const big = payload("x".repeat(300_000));
      const [claim] = await driver.store({ target }, [big]);
      const parsed = parseClaim(driver.name, claim.claimData);
      expect(parsed).toMatchObject({ namespace: "default", workflowId: "run/../1", runId: "r-1" });
      expect(parsed.key).toMatch(/^[0-9a-f]{64}$/);
      // A retried store of the same payload: the same claim, one blob.
      const [again] = await driver.store({ target }, [big]);
      expect(again.claimData).toEqual(claim.claimData);
      expect(await driver.stats()).toEqual({ blobs: 1, bytes: parsed.bytes });
      // The folder of a run never escapes the root, whatever its id.
      const ns = readdirSync(dir);
      expect(ns).toHaveLength(1);
      expect(readdirSync(path.join(dir, ns[0]))[0]).toMatch(/^run____1~[0-9a-f]{16}$/);
      const [back] = await driver.retrieve({}, [claim]);
      expect(Buffer.from(back.data!).toString()).toBe(JSON.stringify("x".repeat(300_000)));
      expect(Buffer.from(back.metadata!.encoding!).toString()).toBe("json/plain");
      const owners = [];
      for await (const o of driver.owners()) owners.push(o);
      expect(owners).toEqual([expect.objectContaining({ namespace: "default", workflowId: "run/../1" })]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a lost blob is a BlobNotFoundError naming the run and the claim; a changed one a BlobCorruptError", async () => {
    const dir = tempDir();
    try {
      const driver = new FileBlobDriver(dir);
      const [a, b] = await driver.store({ target }, [payload("a"), payload("b")]);
      await driver.removeBlob(parseClaim(driver.name, a.claimData));
      const err = await driver.retrieve({}, [a]).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(BlobNotFoundError);
      const lost = err as BlobNotFoundError;
      expect(lost.code).toBe("JAI_BLOB_NOT_FOUND");
      expect(lost.workflowId).toBe("run/../1");
      expect(lost.runId).toBe("r-1");
      expect(lost.message).toContain('workflow "run/../1" run r-1');
      expect(lost.message).toContain(a.claimData.key);
      // Another byte in the file: refused, not decoded.
      const b1 = parseClaim(driver.name, b.claimData);
      const file = readdirSync(dir, { recursive: true, encoding: "utf8" }).find((f) => f.endsWith(b1.key))!;
      writeFileSync(path.join(dir, file), Buffer.concat([readFileSync(path.join(dir, file)), Buffer.from([1])]));
      await expect(driver.retrieve({}, [b])).rejects.toBeInstanceOf(BlobCorruptError);
      // A claim that is not ours.
      await expect(driver.retrieve({}, [new StorageDriverClaim({ bucket: "x" })])).rejects.toThrow(
        /cannot read the claim/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("what it holds under a codec is the ciphertext: no plaintext in the folder", async () => {
    const dir = tempDir();
    try {
      const codec = new AesGcmCodec({ keys: [{ id: "k1", key: Buffer.alloc(32, 7) }] });
      const driver = new FileBlobDriver(dir);
      const sentinel = "SENTINEL-plaintext-4711";
      // What the SDK does: encode with the codec, then store.
      await driver.store({ target }, await codec.encode([payload(sentinel.repeat(10_000))]));
      for (const f of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
        if (!/[0-9a-f]{64}$/.test(f)) continue;
        expect(readFileSync(path.join(dir, f)).includes(Buffer.from(sentinel))).toBe(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("configuration", () => {
  it("JAI_BLOB_STORE names the driver; off, empty and unset mean none; a bad value is refused naming it", () => {
    expect(blobDriverFromSpec(undefined)).toBeUndefined();
    expect(blobDriverFromSpec("off")).toBeUndefined();
    expect(blobDriverFromSpec("")).toBeUndefined();
    expect((blobDriverFromSpec("file:/tmp/x") as FileBlobDriver).root).toBe("/tmp/x");
    expect((blobDriverFromSpec("file:///tmp/y") as FileBlobDriver).root).toBe("/tmp/y");
    expect((blobDriverFromSpec("file") as FileBlobDriver).root).toBe(path.join(os.homedir(), ".jai", "blobs"));
    const pg = blobDriverFromSpec("postgres://jai:secret@127.0.0.1:5432/jai") as PostgresBlobDriver;
    expect(pg).toBeInstanceOf(PostgresBlobDriver);
    expect(pg.where).not.toContain("secret");
    expect(() => blobDriverFromSpec("s3://bucket")).toThrow(BlobStoreConfigError);
    expect(() => blobDriverFromSpec("s3://bucket")).toThrow(/JAI_BLOB_STORE/);
  });

  it("threshold and the kept size take byte counts with units", () => {
    expect(parseBytes("262144", "X")).toBe(262144);
    expect(parseBytes("256k", "X")).toBe(262144);
    expect(parseBytes("20MB", "X")).toBe(20 * 1024 * 1024);
    expect(() => parseBytes("lots", "JAI_BLOB_THRESHOLD")).toThrow(/JAI_BLOB_THRESHOLD/);
    const storage = blobStorageFromEnv({
      JAI_BLOB_STORE: "file:/tmp/z",
      JAI_BLOB_THRESHOLD: "1k",
      JAI_BLOB_MAX_RESULT_BYTES: "1m",
    });
    expect(storage).toBeInstanceOf(AgentBlobStorage);
    expect(storage!.payloadSizeThreshold).toBe(1024);
    expect(storage!.maxResultBytes).toBe(1024 * 1024);
    expect(blobStorageFromEnv({})).toBeUndefined();
  });

  it("dataConverterFromEnv composes codec and store; either alone; neither is Temporal's default", () => {
    const key = `k1:${Buffer.alloc(32, 1).toString("base64")}`;
    const both = dataConverterFromEnv({ JAI_CODEC_KEYS: key, JAI_BLOB_STORE: "file:/tmp/z" });
    expect(both?.payloadCodecs).toHaveLength(1);
    expect(both?.externalStorage).toBeInstanceOf(AgentBlobStorage);
    expect(both?.failureConverterPath).toBeDefined();
    const store = dataConverterFromEnv({ JAI_BLOB_STORE: "file:/tmp/z" });
    expect(store?.payloadCodecs).toBeUndefined();
    expect(storedResultBytes(store)).toBe(DEFAULT_MAX_RESULT_BYTES);
    expect(dataConverterFromEnv({})).toBeUndefined();
    expect(storedResultBytes(undefined)).toBeUndefined();
  });

  it("claims are resolved through the store, and without one the error says what to set", async () => {
    const dir = tempDir();
    try {
      const storage = blobStorageFromEnv({ JAI_BLOB_STORE: `file:${dir}` })!;
      const [claim] = await storage.driver.store({ target }, [payload("hello")]);
      const ref = encodeReferencePayload({ driverName: storage.driver.name, claim, sizeBytes: 10 });
      const [resolved, plain] = await resolvePayloadClaims([ref, payload("inline")], storage);
      expect(Buffer.from(resolved.data!).toString()).toBe('"hello"');
      expect(Buffer.from(plain.data!).toString()).toBe('"inline"');
      await expect(resolvePayloadClaims([ref], undefined)).rejects.toBeInstanceOf(BlobStoreNotConfiguredError);
      await expect(resolvePayloadClaims([ref], undefined)).rejects.toThrow(/set JAI_BLOB_STORE/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the codec server with a store", () => {
  it("/decode reads a claim from the store and decrypts it; a lost blob is a 404 naming it", async () => {
    const dir = tempDir();
    const codec = new AesGcmCodec({ keys: [{ id: "k1", key: Buffer.alloc(32, 5) }] });
    const storage = blobStorageFromEnv({ JAI_BLOB_STORE: `file:${dir}` })!;
    const server = await createCodecServer({
      codecs: [codec],
      origins: ["http://127.0.0.1:8233"],
      authorize: () => true,
      port: 0,
      host: "127.0.0.1",
      externalStorage: storage,
    });
    try {
      const [claim] = await storage.driver.store({ target }, await codec.encode([payload("in the store")]));
      const ref = encodeReferencePayload({ driverName: storage.driver.name, claim, sizeBytes: 10 });
      const json = (p: Payload) => ({
        metadata: Object.fromEntries(
          Object.entries(p.metadata!).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
        ),
        data: Buffer.from(p.data!).toString("base64"),
      });
      const decode = () =>
        fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/decode`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-namespace": "default" },
          body: JSON.stringify({ payloads: [json(ref)] }),
        });
      const ok = await decode();
      expect(ok.status).toBe(200);
      const [back] = ((await ok.json()) as { payloads: { data: string }[] }).payloads;
      expect(Buffer.from(back.data, "base64").toString()).toBe('"in the store"');
      await storage.driver.removeOwner({ namespace: "default", workflowId: target.id });
      const lost = await decode();
      expect(lost.status).toBe(404);
      expect(((await lost.json()) as { code: string }).code).toBe("JAI_BLOB_NOT_FOUND");
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("the limits with a store: what the model sees, not what is kept", () => {
  const MB = 1024 * 1024;

  it("a 5 MB text and a 3 MB image are kept whole; the model's copy is cut to the limits", () => {
    const text = "line\n".repeat(MB);
    const image = "A".repeat(3 * MB);
    const kept = keepToolResult(
      {
        content: [
          { type: "text", text },
          { type: "image", data: image, mimeType: "image/png" },
        ],
      },
      {},
      20 * MB,
    );
    expect(kept.result.content).toEqual([
      { type: "text", text },
      { type: "image", data: image, mimeType: "image/png" },
    ]);
    const view = kept.modelContent!;
    expect(view).toBeDefined();
    const viewText = view.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");
    expect(Buffer.byteLength(viewText)).toBeLessThan(DEFAULT_LIMITS.maxBytes + 1024);
    expect(viewText).toContain("[Output truncated");
    expect(viewText).toContain("[Image omitted: image/png of 3.0 MB");
  });

  it("a result within the limits has no second copy; one over the kept size is cut to it with the note", () => {
    expect(keepToolResult({ content: [{ type: "text", text: "small" }] }, {}, 20 * MB)).toEqual({
      result: { content: [{ type: "text", text: "small" }] },
    });
    const over = keepToolResult({ content: [{ type: "text", text: "y".repeat(3 * MB) }] }, {}, MB);
    const t = (over.result.content[0] as { text: string }).text;
    expect(t.length).toBe(MB);
    expect((over.result.content.at(-1) as { text: string }).text).toContain("[Output truncated");
    // Images count against the kept size with the text.
    const both = keepToolResult(
      {
        content: [
          { type: "text", text: "z".repeat(MB / 2) },
          { type: "image", data: "B".repeat(MB), mimeType: "image/png" },
        ],
      },
      {},
      MB,
    );
    expect(both.result.content[1]).toMatchObject({ type: "text", text: expect.stringContaining("[Image omitted") });
  });

  it("an error text is kept whole with the model's cut copy", () => {
    const text = `boom ${"e".repeat(5 * MB)}`;
    const kept = keepErrorText(text, {}, 20 * MB);
    expect(kept.text).toBe(text);
    expect(Buffer.byteLength(kept.modelText!)).toBeLessThanOrEqual(DEFAULT_LIMITS.maxBytes);
    expect(keepErrorText("short", {}, 20 * MB)).toEqual({ text: "short" });
  });
});
