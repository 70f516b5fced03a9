/**
 * The compose `encryption` profile as documented (issue #38 row 4): compose v2 resolves docker-compose.yml with
 * the variables docs/encryption.md gives, and the codec server is started with the command and environment that
 * resolved file (and the image's ENV) give it, from a folder without the dev server's state as the image's /app.
 * It must serve, not exit 2 into a restart loop, decrypt for the UI's page without a token, and still refuse a
 * page of another origin. The one change: the port, since 8888 may be taken on this machine.
 */
import { afterAll, describe, expect, it } from "@jest/globals";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Payload } from "@temporalio/common";
import { ensureCompose } from "../../scripts/tools.js";
import { dataConverterFromEnv } from "../../src/node/codec/config.js";
import { freePort } from "../../src/node/dev-server.js";
import { within } from "../support/helpers.js";
import { repoRoot } from "../support/service/processes.js";

const KEYS = "2026-11:" + Buffer.alloc(32, 21).toString("base64");
const UI_ENDPOINT = "http://localhost:8888";
const BUILD_TIMEOUT = 15 * 60 * 1000;

interface Service {
  entrypoint?: string[];
  environment?: Record<string, string>;
  networks?: Record<string, unknown>;
  ports?: { host_ip?: string; target: number; published: string }[];
  profiles?: string[];
}

/** `docker compose --profile encryption config` with `vars` as the only compose variables set. */
function resolvedServices(vars: Record<string, string>): Record<string, Service> {
  const out = spawnSync(
    ensureCompose(),
    ["-f", "docker-compose.yml", "--profile", "encryption", "config", "--format", "json"],
    { cwd: repoRoot, encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, ...vars } },
  );
  expect({ status: out.status, stderr: out.stderr }).toEqual({ status: 0, stderr: "" });
  return (JSON.parse(out.stdout) as { services: Record<string, Service> }).services;
}

/** The runtime stage's ENV of the Dockerfile: what every container of the image starts with. */
function imageEnv(): Record<string, string> {
  const dockerfile = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8");
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const block = /^ENV ((?:.*\\\n)*.*)$/m.exec(runtime)?.[1] ?? "";
  return Object.fromEntries(
    block
      .replace(/\\\n/g, " ")
      .split(/\s+/)
      .filter((kv) => kv.includes("="))
      .map((kv) => [kv.slice(0, kv.indexOf("=")), kv.slice(kv.indexOf("=") + 1)]),
  );
}

const children: ChildProcess[] = [];
const dirs: string[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/**
 * Runs the service's entrypoint (`node dist/cli/X.js` is the image's build of src/cli/X.ts, run here through tsx)
 * with only the image's and the service's environment; resolves with its output once it serves or exits.
 */
async function startAsCompose(service: Service, port: number) {
  const [node, script] = service.entrypoint ?? [];
  expect(node).toBe("node");
  const source = /^dist\/cli\/([\w-]+)\.js$/.exec(script ?? "")?.[1];
  expect(source).toBeDefined();
  const cwd = mkdtempSync(path.join(os.tmpdir(), "jai-compose-app-"));
  dirs.push(cwd);
  const child = spawn(
    process.execPath,
    [
      "--import",
      pathToFileURL(path.join(repoRoot, "node_modules/tsx/dist/loader.mjs")).href,
      path.join(repoRoot, "src/cli", `${source}.ts`),
    ],
    {
      cwd,
      env: { PATH: process.env.PATH!, ...imageEnv(), ...service.environment, JAI_CODEC_SERVER_PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  children.push(child);
  let output = "";
  const settled = new Promise<{ serving: boolean; code?: number | null }>((resolve) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/codec server on /.test(output)) resolve({ serving: true });
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => resolve({ serving: false, code }));
  });
  const state = await within(settled, 60000, "the codec server to serve or exit");
  return { ...state, child, output: () => output };
}

function post(port: number, headers: Record<string, string>, body: string) {
  return fetch(`http://127.0.0.1:${port}/decode`, { method: "POST", headers, body });
}

async function sealedBody(secret: string): Promise<string> {
  const codec = dataConverterFromEnv({ JAI_CODEC_KEYS: KEYS })!.payloadCodecs![0];
  const [sealed] = await codec.encode([
    { metadata: { encoding: Buffer.from("json/plain") }, data: Buffer.from(JSON.stringify(secret)) },
  ]);
  const json = (p: Payload) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString("base64")]),
    ),
    data: Buffer.from(p.data!).toString("base64"),
  });
  return JSON.stringify({ payloads: [json(sealed)] });
}

const plaintextOf = async (res: Response) =>
  Buffer.from(((await res.json()) as { payloads: { data: string }[] }).payloads[0].data, "base64").toString();

describe("the compose encryption profile, as docs/encryption.md starts it", () => {
  it(
    "the codec server is reached only through the host's loopback, serves the UI's page without a token, refuses other origins",
    async () => {
      const services = resolvedServices({ JAI_CODEC_KEYS: KEYS, JAI_UI_CODEC_ENDPOINT: UI_ENDPOINT });
      const codecServer = services["codec-server"];
      const ui = Object.values(services).find((s) => s.environment?.TEMPORAL_CODEC_ENDPOINT !== undefined)!;
      expect(codecServer.profiles).toEqual(["encryption"]);

      // The UI's page calls the published port; that port is on the host's loopback only, and no other container
      // shares a network with the codec server, which is what makes serving it without a token safe.
      expect(ui.environment!.TEMPORAL_CODEC_ENDPOINT).toBe(UI_ENDPOINT);
      expect(codecServer.ports).toEqual([
        expect.objectContaining({ host_ip: "127.0.0.1", published: new URL(UI_ENDPOINT).port }),
      ]);
      const networks = Object.keys(codecServer.networks ?? {});
      expect(networks).toHaveLength(1);
      for (const [name, s] of Object.entries(services))
        if (name !== "codec-server") expect(Object.keys(s.networks ?? {})).not.toContain(networks[0]);
      const uiOrigin = `http://localhost:${ui.ports![0].published}`;
      expect(codecServer.environment!.JAI_CODEC_SERVER_ORIGINS.split(",")).toContain(uiOrigin);

      const port = await freePort();
      const started = await startAsCompose(codecServer, port);
      expect({ serving: started.serving, output: started.output() }).toEqual({
        serving: true,
        output: expect.stringContaining(`codec server on http://0.0.0.0:${port}`),
      });
      const secret = `COMPOSE${Date.now().toString(36)}`;
      const body = await sealedBody(secret);
      const json = { "content-type": "application/json", "x-namespace": "default" };
      const ok = await post(port, { ...json, origin: uiOrigin }, body);
      expect(ok.status).toBe(200);
      expect(ok.headers.get("access-control-allow-origin")).toBe(uiOrigin);
      expect(await plaintextOf(ok)).toBe(JSON.stringify(secret));
      const foreign = await post(port, { ...json, origin: "http://evil.example" }, body);
      expect(foreign.status).toBe(403);
      expect(await foreign.text()).not.toContain(Buffer.from(JSON.stringify(secret)).toString("base64"));
      // What an HTML form or a no-cors fetch can send: never a codec call.
      for (const headers of [
        { "content-type": "text/plain", origin: uiOrigin },
        { "content-type": "text/plain" },
      ] as Record<string, string>[])
        expect((await post(port, headers, body)).status).toBe(415);
      started.child.kill("SIGTERM");
    },
    BUILD_TIMEOUT,
  );

  it(
    "with JAI_CODEC_SERVER_TOKENS set, a token is required again; without JAI_CODEC_KEYS it exits 2 naming them",
    async () => {
      const withTokens = resolvedServices({
        JAI_CODEC_KEYS: KEYS,
        JAI_UI_CODEC_ENDPOINT: UI_ENDPOINT,
        JAI_CODEC_SERVER_TOKENS: "compose-token",
      })["codec-server"];
      const port = await freePort();
      const started = await startAsCompose(withTokens, port);
      expect(started.serving).toBe(true);
      const body = await sealedBody("tokened");
      const json = { "content-type": "application/json", origin: "http://localhost:8080" };
      expect((await post(port, json, body)).status).toBe(401);
      const ok = await post(port, { ...json, authorization: "Bearer compose-token" }, body);
      expect(await plaintextOf(ok)).toBe('"tokened"');
      started.child.kill("SIGTERM");

      const keyless = await startAsCompose(resolvedServices({})["codec-server"], await freePort());
      expect({ serving: keyless.serving, code: keyless.code }).toEqual({ serving: false, code: 2 });
      expect(keyless.output()).toContain("no keys: set JAI_CODEC_KEYS");
    },
    BUILD_TIMEOUT,
  );
});
