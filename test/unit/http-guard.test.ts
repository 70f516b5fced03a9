/**
 * One HTTP app, one guard (src/http/app.ts): the same attacks, sent as an attacker would (any Host, any Origin,
 * a form's content type, a token in the URL, a wrong token, a "#" in the path), against each server built on it:
 * the run API, the codec server (tokenless on loopback, and with tokens) and health/metrics. Each refusal is
 * checked against what a legitimate request to the same server gets.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { request, type Server } from "node:http";
import { startRunServer, type RunServer } from "../../src/http/server.js";
import { bearerTokens, createCodecServer } from "../../src/http/codec-server.js";
import { serveHealth } from "../../src/worker/process/health.js";
import { createHttpApp } from "../../src/http/app.js";

const TOKEN = "guard-test-token";
const UI = "http://127.0.0.1:8233";

interface Target {
  name: string;
  port: number;
  /** A request the server must answer 200. */
  ok: { method: string; path: string; headers: Record<string, string>; body?: string };
  /** Its bearer is checked. */
  bearer: boolean;
  /** Its Host names are checked. */
  hosts: boolean;
}

function send(port: number, method: string, path: string, headers: Record<string, string>, body?: string) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(
      { host: "127.0.0.1", port, method, path, headers: { connection: "close", ...headers } },
      (res) => {
        let text = "";
        res.on("data", (c: Buffer) => (text += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const targets: Target[] = [];
let run: RunServer;
const servers: Server[] = [];
beforeAll(async () => {
  // The guard answers before any route reaches the Temporal client: none is needed here.
  run = await startRunServer({ client: {} as never, port: 0, token: TOKEN });
  const bearer = { authorization: `Bearer ${TOKEN}` };
  targets.push({
    name: "run API",
    port: Number(new URL(run.url).port),
    ok: { method: "GET", path: "/agents", headers: bearer },
    bearer: true,
    hosts: true,
  });
  const decode = JSON.stringify({ payloads: [] });
  const json = { "content-type": "application/json" };
  const loopback = await createCodecServer({ codecs: [], origins: [UI], authorize: "loopback", port: 0 });
  const tokened = await createCodecServer({ codecs: [], origins: [UI], authorize: bearerTokens([TOKEN]), port: 0 });
  const health = await serveHealth({ healthy: () => true, ready: () => true, detail: () => ({}) }, 0);
  servers.push(loopback, tokened, health);
  const portOf = (s: Server) => (s.address() as { port: number }).port;
  targets.push(
    {
      name: "codec server (loopback, no tokens)",
      port: portOf(loopback),
      ok: { method: "POST", path: "/decode", headers: json, body: decode },
      bearer: false,
      hosts: true,
    },
    {
      name: "codec server (tokens)",
      port: portOf(tokened),
      ok: { method: "POST", path: "/decode", headers: { ...json, ...bearer }, body: decode },
      bearer: true,
      hosts: false,
    },
    {
      name: "health and metrics",
      port: portOf(health),
      ok: { method: "GET", path: "/healthz", headers: {} },
      bearer: false,
      hosts: true,
    },
  );
});
afterAll(async () => {
  await run?.close();
  for (const s of servers) s.close();
});

const each = (test: (t: Target) => Promise<void>) => async () => {
  for (const t of targets) await test(t);
};

describe("one guard in front of every server", () => {
  it(
    "a legitimate request passes",
    each(async (t) => {
      expect([t.name, (await send(t.port, t.ok.method, t.ok.path, t.ok.headers, t.ok.body)).status]).toEqual([
        t.name,
        200,
      ]);
    }),
  );

  it(
    "a DNS-rebound Host is refused (403) where the server answers by name",
    each(async (t) => {
      if (!t.hosts) return;
      for (const host of [`rebind.example:${t.port}`, `127.0.0.1.nip.io:${t.port}`]) {
        const answer = await send(t.port, t.ok.method, t.ok.path, { ...t.ok.headers, host }, t.ok.body);
        expect([t.name, answer.status, JSON.parse(answer.body).error]).toEqual([
          t.name,
          403,
          expect.stringContaining(`refused Host "${host}"`),
        ]);
      }
    }),
  );

  it(
    "another site's page is refused (403): a foreign Origin",
    each(async (t) => {
      const answer = await send(
        t.port,
        t.ok.method,
        t.ok.path,
        { ...t.ok.headers, origin: "http://evil.example" },
        t.ok.body,
      );
      expect([t.name, answer.status]).toEqual([t.name, 403]);
      expect(answer.body).not.toContain("payloads");
    }),
  );

  it(
    "a write that is not JSON (a form, a no-cors fetch) is refused (415)",
    each(async (t) => {
      for (const type of ["text/plain", "application/x-www-form-urlencoded"]) {
        const answer = await send(t.port, "POST", t.ok.path, { ...t.ok.headers, "content-type": type }, "payloads=1");
        expect([t.name, type, answer.status]).toEqual([t.name, type, 415]);
      }
    }),
  );

  it(
    "a token in the query string (400) and a wrong or missing bearer (401) are refused",
    each(async (t) => {
      const query = await send(t.port, t.ok.method, `${t.ok.path}?token=${TOKEN}`, t.ok.headers, t.ok.body);
      expect([t.name, query.status]).toEqual([t.name, 400]);
      if (!t.bearer) return;
      for (const authorization of ["Bearer wrong-token-of-same-length!", "", `Basic ${TOKEN}`]) {
        const answer = await send(t.port, t.ok.method, t.ok.path, { ...t.ok.headers, authorization }, t.ok.body);
        expect([t.name, authorization, answer.status]).toEqual([t.name, authorization, 401]);
      }
    }),
  );

  it(
    'a "#" in the request path is refused (400)',
    each(async (t) => {
      const answer = await send(t.port, t.ok.method, `${t.ok.path}#x`, t.ok.headers, t.ok.body);
      expect([t.name, answer.status]).toEqual([t.name, 400]);
    }),
  );
});

describe("an unexpected error", () => {
  it("answers 500 with a reference only; its message and stack go to the operator's log", async () => {
    const lines: string[] = [];
    const http = createHttpApp({ hosts: "served", origins: "same-origin" }, { log: (l) => lines.push(l) });
    http.app.get("/boom", async () => {
      throw new Error("connect ECONNREFUSED 10.1.2.3:7233 reading /srv/secrets/tenant-b.json");
    });
    http.app.get("/gone", async () => {
      throw Object.assign(new Error("no such thing"), { statusCode: 404 });
    });
    const { port } = await http.listen("127.0.0.1", 0);
    try {
      const boom = await send(port, "GET", "/boom?token=x", {});
      expect(boom.status).toBe(400); // a token in the URL is refused before any route runs
      const answer = await send(port, "GET", "/boom", {});
      expect(answer.status).toBe(500);
      expect(answer.body).not.toMatch(/ECONNREFUSED|10\.1\.2\.3|secrets|at /);
      const ref = /internal error \(([0-9a-f]{8});/.exec(JSON.parse(answer.body).error)?.[1];
      expect(ref).toBeDefined();
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`error ${ref} answering GET /boom: Error: connect ECONNREFUSED 10.1.2.3:7233`);
      // A 4xx a route meant is the caller's to read.
      expect(await send(port, "GET", "/gone", {})).toEqual({
        status: 404,
        body: JSON.stringify({ error: "no such thing" }),
      });
      expect(lines).toHaveLength(1);
    } finally {
      await http.app.close();
    }
  });
});
