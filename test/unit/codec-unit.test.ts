/** The AES-256-GCM codec, its configuration and the codec server's HTTP protocol, without Temporal (issue 12). */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdtempSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { defaultPayloadConverter, type Payload } from "@temporalio/common";
import {
  AesGcmCodec,
  CodecConfigError,
  CodecKeyError,
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
} from "../../src/node/codec/aes-gcm.js";
import { codecFromEnv, parseCodecKeys } from "../../src/node/codec/config.js";
import { bearerTokens, createCodecServer } from "../../src/http/codec-server.js";

const key = (fill: number) => Buffer.alloc(32, fill);
const A = { id: "A", key: key(1) };
const B = { id: "B", key: key(2) };
const payload = (value: unknown) => defaultPayloadConverter.toPayload(value);
const value = (p: Payload) => defaultPayloadConverter.fromPayload(p);
const str = (b: Uint8Array | undefined) => Buffer.from(b ?? []).toString();

describe("AesGcmCodec", () => {
  it("round-trips, with a fresh nonce per payload, the key id in metadata and no plaintext", async () => {
    const codec = new AesGcmCodec({ keys: [A] });
    const secret = { text: "top-secret-sentinel" };
    const [one, two] = await codec.encode([payload(secret), payload(secret)]);
    expect(str(one.metadata?.encoding)).toBe(ENCRYPTED_ENCODING);
    expect(str(one.metadata?.[KEY_ID_METADATA])).toBe("A");
    expect(Buffer.from(one.data!).includes("top-secret")).toBe(false);
    expect(Buffer.from(one.data!).subarray(0, 12).equals(Buffer.from(two.data!).subarray(0, 12))).toBe(false);
    expect(Buffer.from(one.data!).equals(Buffer.from(two.data!))).toBe(false);
    expect((await codec.decode([one, two])).map(value)).toEqual([secret, secret]);
  });

  it("rotation: [B current, A old] writes with B and reads both; [A] alone cannot read B and names it", async () => {
    const old = new AesGcmCodec({ keys: [A] });
    const rotated = new AesGcmCodec({ keys: [B, A] });
    const [underA] = await old.encode([payload("from A")]);
    const [underB] = await rotated.encode([payload("from B")]);
    expect(str(underB.metadata?.[KEY_ID_METADATA])).toBe("B");
    expect((await rotated.decode([underA, underB])).map(value)).toEqual(["from A", "from B"]);
    const err = (await old.decode([underB]).catch((e: unknown) => e)) as CodecKeyError;
    expect(err).toBeInstanceOf(CodecKeyError);
    expect(err.keyId).toBe("B");
    expect(err.reason).toBe("missing-key");
    expect(err.message).toMatch(/key "B", which this process does not have \(loaded: A\)/);
  });

  it("a different key under the same id, a relabelled key id or a flipped bit: wrong-key, never garbage", async () => {
    const [sealed] = await new AesGcmCodec({ keys: [A] }).encode([payload("x")]);
    const impostor = new AesGcmCodec({ keys: [{ id: "A", key: key(9) }] });
    await expect(impostor.decode([sealed])).rejects.toMatchObject({
      name: "CodecKeyError",
      keyId: "A",
      reason: "wrong-key",
    });
    const both = new AesGcmCodec({ keys: [A, { id: "C", key: key(1) }] });
    const relabelled = { ...sealed, metadata: { ...sealed.metadata, [KEY_ID_METADATA]: Buffer.from("C") } };
    await expect(both.decode([relabelled])).rejects.toMatchObject({ keyId: "C", reason: "wrong-key" });
    const flipped = Buffer.from(sealed.data!);
    flipped[20] ^= 1;
    await expect(both.decode([{ ...sealed, data: flipped }])).rejects.toMatchObject({
      keyId: "A",
      reason: "wrong-key",
    });
    await expect(both.decode([{ ...sealed, data: flipped.subarray(0, 10) }])).rejects.toMatchObject({
      reason: "malformed",
    });
  });

  it("compression before encryption shrinks repetitive payloads and still round-trips; incompressible ones are left as is", async () => {
    const text = "the same tool output line\n".repeat(400);
    const [plain] = await new AesGcmCodec({ keys: [A] }).encode([payload(text)]);
    const packed = new AesGcmCodec({ keys: [A], compress: true });
    const [small] = await packed.encode([payload(text)]);
    expect(small.data!.length).toBeLessThan(plain.data!.length / 10);
    expect(value((await packed.decode([small]))[0])).toBe(text);
    const [tiny] = await packed.encode([payload(1)]);
    expect(str(tiny.metadata?.["encryption-cipher"])).toBe("AES256-GCM");
  });

  it("payloads it did not encrypt pass through decode untouched", async () => {
    const p = payload({ plain: true });
    expect(await new AesGcmCodec({ keys: [A] }).decode([p])).toEqual([p]);
  });
});

describe("codec configuration", () => {
  const k = (fill: number) => key(fill).toString("base64");
  it("JAI_CODEC_KEYS and JAI_CODEC_KEY_FILE: first key current; bad entries are named", () => {
    expect(codecFromEnv({})).toBeUndefined();
    const codec = codecFromEnv({ JAI_CODEC_KEYS: `new:${k(2)}, old:${k(1)}` })!;
    expect(codec.keyIds).toEqual(["new", "old"]);
    expect(codec.currentKeyId).toBe("new");
    const dir = mkdtempSync(path.join(os.tmpdir(), "codec-keys-"));
    const file = path.join(dir, "keys");
    writeFileSync(file, `# rotated 2026-11\nB:${k(2)}\nA:${k(1)}\n`);
    expect(codecFromEnv({ JAI_CODEC_KEY_FILE: file })!.keyIds).toEqual(["B", "A"]);
    expect(() => codecFromEnv({ JAI_CODEC_KEY_FILE: path.join(dir, "nope") })).toThrow(
      /JAI_CODEC_KEY_FILE=.*nope: cannot read it \(ENOENT\)/,
    );
    expect(() => codecFromEnv({ JAI_CODEC_KEYS: `A:${k(1)}`, JAI_CODEC_KEY_FILE: file })).toThrow(/not both/);
    expect(() =>
      parseCodecKeys(`short:${Buffer.alloc(16).toString("base64")}`, "JAI_CODEC_KEYS").map(
        (x) => new AesGcmCodec({ keys: [x] }),
      ),
    ).toThrow(/codec key "short" is 16 bytes; AES-256 needs 32/);
    expect(() => parseCodecKeys("nocolon", "JAI_CODEC_KEYS")).toThrow(/JAI_CODEC_KEYS: entry 1 is not "id:base64key"/);
    expect(() => new AesGcmCodec({ keys: [A, A] })).toThrow(CodecConfigError);
  });
});

describe("codec server protocol", () => {
  const codec = new AesGcmCodec({ keys: [A] });
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = await createCodecServer({
      codecs: [codec],
      origins: ["http://ui.example"],
      authorize: bearerTokens(["s3cret"]),
      port: 0,
    });
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => void server?.close());

  const json = (p: Payload) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    ),
    data: Buffer.from(p.data ?? []).toString("base64"),
  });
  const post = (op: string, body: unknown, headers: Record<string, string> = { Authorization: "Bearer s3cret" }) =>
    fetch(`${url}/${op}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-namespace": "default", ...headers },
      body: JSON.stringify(body),
    });

  it("preflight answers the UI's origin (and not others) without credentials", async () => {
    const ok = await fetch(`${url}/decode`, {
      method: "OPTIONS",
      headers: {
        origin: "http://ui.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization,content-type,x-namespace",
      },
    });
    expect(ok.status).toBe(204);
    expect(ok.headers.get("access-control-allow-origin")).toBe("http://ui.example");
    expect(ok.headers.get("access-control-allow-headers")).toMatch(/Authorization/);
    const other = await fetch(`${url}/decode`, { method: "OPTIONS", headers: { origin: "http://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("decode and encode with the token; 401 without it or with another; 422 naming a missing key", async () => {
    const [sealed] = await codec.encode([payload("hello from the codec")]);
    const decoded = await post("decode", { payloads: [json(sealed)] });
    expect(decoded.status).toBe(200);
    const body = (await decoded.json()) as { payloads: { metadata: Record<string, string>; data: string }[] };
    expect(Buffer.from(body.payloads[0].data, "base64").toString()).toBe('"hello from the codec"');
    const encoded = (await (await post("encode", { payloads: [json(payload("again"))] })).json()) as {
      payloads: { metadata: Record<string, string> }[];
    };
    expect(Buffer.from(encoded.payloads[0].metadata.encoding, "base64").toString()).toBe(ENCRYPTED_ENCODING);
    expect((await post("decode", { payloads: [json(sealed)] }, {})).status).toBe(401);
    expect((await post("decode", { payloads: [json(sealed)] }, { Authorization: "Bearer nope" })).status).toBe(401);
    const [foreign] = await new AesGcmCodec({ keys: [B] }).encode([payload("x")]);
    const missing = await post("decode", { payloads: [json(foreign)] });
    expect(missing.status).toBe(422);
    expect(await missing.json()).toMatchObject({ keyId: "B", reason: "missing-key" });
    expect((await post("decode", { nope: 1 })).status).toBe(400);
  });
});
