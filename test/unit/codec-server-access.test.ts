/**
 * The codec server from the attacker's side (issue #38 row 4). Without tokens it decrypts for loopback peers
 * only, so the dev server's UI (which has no token to forward) shows plaintext; these tests are what that must
 * not open up: a page on another origin, a DNS-rebound host name, a form or no-cors post, a peer off loopback,
 * and a tokenless server listening beyond loopback (refused before it listens).
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createServer, request, type Server } from "node:http";
import { networkInterfaces } from "node:os";
import type { Payload } from "@temporalio/common";
import { AesGcmCodec } from "../../src/node/codec/aes-gcm.js";
import { parseCodecKeys } from "../../src/node/codec/config.js";
import {
  codecRequestHandler,
  CodecServerConfigError,
  createCodecServer,
  isLoopbackHost,
} from "../../src/http/codec-server.js";

const codec = new AesGcmCodec({ keys: parseCodecKeys("k:" + Buffer.alloc(32, 3).toString("base64"), "test") });
const UI = "http://127.0.0.1:8233";
const SECRET = "SECRET-PLAINTEXT";

let server: Server;
let base: string;
let body: string;
beforeAll(async () => {
  server = await createCodecServer({ codecs: [codec], origins: [UI], authorize: "loopback", port: 0 });
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const [sealed] = await codec.encode([
    { metadata: { encoding: Buffer.from("json/plain") }, data: Buffer.from(JSON.stringify(SECRET)) },
  ]);
  body = JSON.stringify({ payloads: [json(sealed)] });
});
afterAll(() => void server?.close());

function json(p: Payload) {
  return {
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    ),
    data: Buffer.from(p.data ?? []).toString("base64"),
  };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One request with any headers (Host and Origin included, which fetch would not let us set). */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; localAddress?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? "POST",
        headers: { connection: "close", ...options.headers },
        localAddress: options.localAddress,
      },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const asJson = { "content-type": "application/json", "x-namespace": "default" };

describe("the tokenless (loopback) codec server", () => {
  it("decrypts for the UI's origin and for a local client without Origin, with no token", async () => {
    for (const headers of [{ ...asJson, origin: UI }, asJson]) {
      const ok = await send(`${base}/decode`, { headers, body });
      expect(ok.status).toBe(200);
      expect(Buffer.from(JSON.parse(ok.body).payloads[0].data, "base64").toString()).toBe(JSON.stringify(SECRET));
    }
    const preflight = await send(`${base}/decode`, {
      method: "OPTIONS",
      headers: { origin: UI, "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe(UI);
  });

  it("refuses a page of another origin (403, no CORS headers, no plaintext), preflight included", async () => {
    const port = new URL(base).port;
    for (const origin of ["http://evil.example", "null", "http://127.0.0.1:8234", `http://localhost:${port}`]) {
      const post = await send(`${base}/decode`, { headers: { ...asJson, origin }, body });
      expect(post.status).toBe(403);
      expect(post.body).not.toContain(Buffer.from(JSON.stringify(SECRET)).toString("base64"));
      expect(JSON.parse(post.body).error).toContain(`refused Origin "${origin}"`);
      expect(post.headers["access-control-allow-origin"]).toBeUndefined();
      const preflight = await send(`${base}/decode`, {
        method: "OPTIONS",
        headers: { origin, "access-control-request-method": "POST" },
      });
      expect(preflight.status).toBe(403);
      expect(preflight.headers["access-control-allow-origin"]).toBeUndefined();
    }
  });

  it("refuses a form or no-cors post: a body that is not application/json gets 415", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const sent = await send(`${base}/decode`, { headers: { "content-type": type }, body });
      expect(sent.status).toBe(415);
      expect(sent.body).not.toContain(Buffer.from(JSON.stringify(SECRET)).toString("base64"));
    }
  });

  it("refuses a DNS-rebound host name (a Host that is not a loopback name), even without an Origin", async () => {
    const port = new URL(base).port;
    for (const host of [`rebind.example:${port}`, `127.0.0.1.nip.io:${port}`, "evil.example"]) {
      const sent = await send(`${base}/decode`, { headers: { ...asJson, host }, body });
      expect(sent.status).toBe(403);
      expect(JSON.parse(sent.body).error).toContain(`refused Host "${host}"`);
    }
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`])
      expect((await send(`${base}/decode`, { headers: { ...asJson, host }, body })).status).toBe(200);
  });

  it("refuses a peer that is not on loopback (the handler embedded in a server on every interface)", async () => {
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    if (!outside) throw new Error("this test needs a non-loopback IPv4 interface to call from");
    const wide = createServer(codecRequestHandler({ codecs: [codec], origins: [UI], authorize: "loopback" }));
    await new Promise<void>((resolve) => wide.listen(0, "0.0.0.0", resolve));
    try {
      const port = (wide.address() as { port: number }).port;
      // Host names loopback, as a rebinding page would make it; the peer address is what gives it away.
      const sent = await send(`http://${outside}:${port}/decode`, {
        headers: { ...asJson, host: `127.0.0.1:${port}` },
        body,
        localAddress: outside,
      });
      expect(sent.status).toBe(403);
      expect(JSON.parse(sent.body).error).toContain("loopback peers only");
    } finally {
      wide.close();
    }
  });

  it("will not listen beyond loopback without tokens, nor take '*' or a malformed origin: a typed error naming the fix", async () => {
    const refused = createCodecServer({
      codecs: [codec],
      origins: [UI],
      authorize: "loopback",
      port: 0,
      host: "0.0.0.0",
    });
    await expect(refused).rejects.toThrow(CodecServerConfigError);
    await expect(refused).rejects.toThrow(/listening on 0\.0\.0\.0 needs tokens.*JAI_CODEC_SERVER_TOKENS/);
    await expect(
      createCodecServer({ codecs: [codec], origins: ["*"], authorize: "loopback", port: 0 }),
    ).rejects.toThrow(/origin "\*" needs an authorizer/);
    await expect(
      createCodecServer({ codecs: [codec], origins: ["http://localhost:8233/"], authorize: () => true, port: 0 }),
    ).rejects.toThrow(/origin "http:\/\/localhost:8233\/" is not an origin .*did you mean "http:\/\/localhost:8233"/);
    expect(["localhost", "127.0.0.1", "127.1.2.3", "::1", "[::1]", "::ffff:127.0.0.1"].every(isLoopbackHost)).toBe(
      true,
    );
    expect(["0.0.0.0", "192.0.2.2", "127.0.0.1.nip.io", "localhost.evil.example", "::"].some(isLoopbackHost)).toBe(
      false,
    );
  });
});
