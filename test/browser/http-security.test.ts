/**
 * The run HTTP API from the attacker's side (issue #36): a page on another
 * origin, a DNS-rebound host name, a request without the token, a token in
 * the query string, an SSE flood, a workflow that is not an agent run; and
 * health + /metrics on loopback. Against the real dev server and Chromium.
 */
import { createServer, request, type Server } from "node:http";
import { networkInterfaces } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { launchChromium } from "../../scripts/chromium.js";
import { startAgentRun } from "../../src/client/client.js";
import { startRunEventsService, type RunEventsService } from "../../src/worker/events/serve.js";
import { startRunServer } from "../../src/http/server.js";
import { openTestEnv, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { killAllWorkers, startSourceWorker } from "../support/service/processes.js";

let env: TestEnv;
let service: RunEventsService;
beforeAll(async () => {
  delete process.env.JAI_HTTP_TOKEN; // the default: no token configured
  env = await openTestEnv();
  service = await startRunEventsService({ client: env.client, port: 0 });
});
afterAll(async () => {
  killAllWorkers();
  await service?.server.close();
  await env?.close();
});

/** An agent run no worker serves: it stays running, so whether anyone asked to cancel it shows in its history. */
async function idleRun(): Promise<string> {
  const handle = await startAgentRun(env.client, {
    taskQueue: uniqueId("nobody"),
    workflowId: uniqueId("victim"),
    model: "faux/none",
    prompt: "Say hi",
  });
  return handle.workflowId;
}

async function cancelRequested(workflowId: string): Promise<boolean> {
  const { events } = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (events ?? []).some((e) => e.workflowExecutionCancelRequestedEventAttributes);
}

interface Answer {
  status: number;
  body: string;
}

/** One HTTP request with any headers (Host included); an event stream is answered with its status and dropped. */
function send(
  base: string,
  pathname: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Answer> {
  const url = new URL(pathname, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? "GET", headers: { connection: "close", ...options.headers } },
      (res) => {
        if (String(res.headers["content-type"]).startsWith("text/event-stream")) {
          resolve({ status: res.statusCode!, body: "" });
          res.destroy();
          return;
        }
        let body = "";
        res.on("data", (c: Buffer) => (body += c.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const bearer = () => ({ authorization: `Bearer ${service.server.token}` });
const json = { "content-type": "application/json" };

describe("the run API refuses what a foreign page or host sends", () => {
  it("answers only under its own Host names (DNS rebinding)", async () => {
    const id = await idleRun();
    const { url } = service.server;
    const port = new URL(url).port;
    for (const host of [
      "evil.example",
      `evil.example:${port}`,
      `127.0.0.1.nip.io:${port}`,
      `127.0.0.1:${Number(port) + 1}`,
    ]) {
      const state = await send(url, `/runs/${id}/events`, { headers: { ...bearer(), host } });
      expect(state.status).toBe(403);
      expect(JSON.parse(state.body).error).toContain(`refused Host "${host}"`);
      expect((await send(url, "/", { headers: { host } })).status).toBe(403);
      const cancel = await send(url, `/runs/${id}/cancel`, {
        method: "POST",
        headers: { ...bearer(), ...json, host, origin: `http://${host}`, "sec-fetch-site": "same-origin" },
        body: "{}",
      });
      expect(cancel.status).toBe(403);
    }
    expect(await cancelRequested(id)).toBe(false);
    // Its own names pass.
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`])
      expect((await send(url, `/runs/${id}/events`, { headers: { ...bearer(), host } })).status).toBe(200);
  });

  it("refuses state-changing requests from another origin or without a JSON body, and data to another site's page", async () => {
    const id = await idleRun();
    const { url } = service.server;
    const post = (headers: Record<string, string>, body = "{}") =>
      send(url, `/runs/${id}/cancel`, { method: "POST", headers: { ...bearer(), ...headers }, body });
    const foreign = [
      { ...json, origin: "http://evil.example" },
      { ...json, origin: "null" },
      { ...json, origin: `http://127.0.0.1:${Number(new URL(url).port) + 1}` },
      { ...json, "sec-fetch-site": "cross-site" },
      { ...json, "sec-fetch-site": "same-site" },
    ];
    for (const headers of foreign) {
      const answer = await post(headers);
      expect(answer.status).toBe(403);
      expect(JSON.parse(answer.body).error).toMatch(/^cross-origin request refused/);
    }
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]) {
      const answer = await post({ "content-type": type });
      expect(answer.status).toBe(415);
      expect(JSON.parse(answer.body).error).toContain("needs Content-Type: application/json");
    }
    expect((await post({})).status).toBe(415); // no content type at all
    // A GET with data is refused to another site's page too.
    expect(
      (await send(url, `/runs/${id}/events`, { headers: { ...bearer(), "sec-fetch-site": "cross-site" } })).status,
    ).toBe(403);
    expect(await cancelRequested(id)).toBe(false);
    // The console's own request (same origin, JSON, token) does cancel, and an empty JSON body is fine.
    const own = await post({ ...json, origin: url, "sec-fetch-site": "same-origin" }, "");
    expect(own.status).toBe(200);
    expect(await cancelRequested(id)).toBe(true);
  });

  it("mints a token when none is configured; nothing works without it, and never from the query string", async () => {
    const id = await idleRun();
    const { url, token, consoleUrl } = service.server;
    expect(service.server.tokenMinted).toBe(true);
    expect(token).toMatch(/^[\w-]{32,}$/);
    expect(consoleUrl).toBe(`${url}/#token=${token}`);
    const other = await startRunServer({ client: env.client, port: 0 });
    try {
      expect(other.token).not.toBe(token); // one per start
    } finally {
      await other.close();
    }
    const attempts: [string, string, Record<string, string>][] = [
      ["GET", `/runs/${id}/events`, {}],
      ["GET", `/runs/${id}`, {}],
      ["POST", `/runs/${id}/cancel`, json],
      ["POST", `/runs/${id}/steer`, json],
      ["POST", "/runs", json],
      ["POST", `/runs/${id}/cancel`, { ...json, authorization: "Bearer wrong" }],
      ["POST", `/runs/${id}/cancel`, { ...json, authorization: `Basic ${token}` }],
    ];
    for (const [method, at, headers] of attempts) {
      const answer = await send(url, at, { method, headers, body: method === "POST" ? '{"message":"x"}' : undefined });
      expect([method, at, answer.status]).toEqual([method, at, 401]);
    }
    for (const [method, at] of [
      ["POST", `/runs/${id}/cancel?token=${token}`],
      ["GET", `/runs/${id}/events?token=${token}`],
    ]) {
      const answer = await send(url, at, { method, headers: json, body: method === "POST" ? "{}" : undefined });
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.body).error).toContain("not accepted");
    }
    expect(await cancelRequested(id)).toBe(false);
    // The pages carry no data and load without it (their requests send it).
    expect((await send(url, `/runs/${id}/console`)).status).toBe(200);
    // Bound beyond loopback: a configured token, or no start at all.
    await expect(startRunServer({ client: env.client, port: 0, host: "0.0.0.0" })).rejects.toThrow(
      /without a bearer token/,
    );
    await expect(startRunServer({ client: env.client, port: 0, host: "0.0.0.0", token: false })).rejects.toThrow(
      /without a bearer token/,
    );
  });

  it("caps event streams per run and in all (429), and frees a slot when a reader leaves", async () => {
    const capped = await startRunEventsService({
      client: env.client,
      port: 0,
      maxEventStreams: { perRun: 2, total: 3 },
    });
    const open: AbortController[] = [];
    const stream = async (server: { url: string; token?: string }, id: string) => {
      const abort = new AbortController();
      const res = await fetch(`${server.url}/runs/${id}/events`, {
        headers: { authorization: `Bearer ${server.token}` },
        signal: abort.signal,
      });
      if (res.ok) open.push(abort);
      return { status: res.status, error: res.ok ? "" : ((await res.json()) as { error: string }).error };
    };
    try {
      const [a, b] = [await idleRun(), await idleRun()];
      expect((await stream(capped.server, a)).status).toBe(200);
      expect((await stream(capped.server, a)).status).toBe(200);
      const overRun = await stream(capped.server, a);
      expect(overRun.status).toBe(429);
      expect(overRun.error).toContain(`too many event streams of run ${a}`);
      expect((await stream(capped.server, b)).status).toBe(200);
      const overAll = await stream(capped.server, b);
      expect(overAll.status).toBe(429);
      expect(overAll.error).toContain("too many event streams (3 open)");
      open.shift()!.abort(); // a reader of run a leaves: its slot comes back
      await within(
        (async () => {
          while ((await stream(capped.server, a)).status !== 200) await new Promise((r) => setTimeout(r, 50));
        })(),
        10_000,
        "the slot to be freed",
      );
      // The default cap: 16 per run.
      const c = await idleRun();
      for (let i = 0; i < 16; i++) expect((await stream(service.server, c)).status).toBe(200);
      expect((await stream(service.server, c)).status).toBe(429);
    } finally {
      for (const abort of open) abort.abort();
      await capped.server.close();
    }
  });

  it("acts on agent runs only: any other workflow of the namespace is 404", async () => {
    const workflowId = uniqueId("not-an-agent");
    const other = await env.client.workflow.start("notAnAgentRun", {
      taskQueue: uniqueId("nobody"),
      workflowId,
      args: [],
    });
    const { url } = service.server;
    const attempts: [string, string][] = [
      ["GET", `/runs/${workflowId}`],
      ["GET", `/runs/${workflowId}/events`],
      ["POST", `/runs/${workflowId}/cancel`],
      ["POST", `/runs/${workflowId}/steer`],
      ["POST", `/runs/${workflowId}/approve`],
    ];
    for (const [method, at] of attempts) {
      const body = at.endsWith("approve") ? '{"toolCallId":"t"}' : '{"message":"stop"}';
      const answer = await send(url, at, {
        method,
        headers: { ...bearer(), ...json },
        body: method === "POST" ? body : undefined,
      });
      expect([at, answer.status]).toEqual([at, 404]);
      expect(JSON.parse(answer.body).error).toBe(`no agent run ${workflowId}`);
    }
    expect((await other.describe()).status.name).toBe("RUNNING");
    expect(await cancelRequested(workflowId)).toBe(false);
    await other.terminate("test done");
  });
});

/** A plain server for the attacker's page. */
async function serve(html: string, port = 0): Promise<Server> {
  const server = createServer((_req, res) => res.writeHead(200, { "content-type": "text/html" }).end(html));
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return server;
}
const portOf = (server: Server) => (server.address() as { port: number }).port;
const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

describe("in Chromium, a page on another origin", () => {
  it("cannot cancel a run with a no-cors fetch, a form or a beacon, even with the token turned off", async () => {
    const id = await idleRun();
    // token: false, so only the origin checks stand between the page and the run (the attack that worked before).
    const open = await startRunServer({ client: env.client, port: 0, token: false });
    const seen: string[] = [];
    open.app.server.on("request", (req) => void seen.push(`${req.method} ${req.url}`)); // proof the attacks arrived
    const target = `${open.url}/runs/${id}/cancel`;
    const attacker = await serve(`<!doctype html><body><script>
      (async () => {
        await fetch(${JSON.stringify(target)}, { method: "POST", mode: "no-cors" }).catch(() => {});
        await fetch(${JSON.stringify(target)}, { method: "POST", mode: "no-cors", headers: { "content-type": "text/plain" }, body: "{}" }).catch(() => {});
        navigator.sendBeacon(${JSON.stringify(target)}, new Blob(["{}"], { type: "text/plain" }));
        await fetch(${JSON.stringify(target)}, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }).catch(() => {});
        document.body.dataset.done = "1";
      })();
    </script></body>`);
    const browser = await launchChromium();
    try {
      const page = await browser.newPage();
      await page.goto(`http://localhost:${portOf(attacker)}/`);
      await page.waitForSelector("body[data-done]", { state: "attached", timeout: 30_000 });
      // A classic form post too (a navigation, not a fetch).
      await page.setContent(
        `<form method="POST" action="${target}"><input name="x" value="1"></form><script>document.forms[0].submit()</script>`,
      );
      await page.waitForURL(target, { timeout: 30_000 });
      await within(
        (async () => {
          while (seen.filter((s) => s === `POST /runs/${id}/cancel`).length < 4)
            await new Promise((r) => setTimeout(r, 50));
        })(),
        30_000,
        "the attacks to reach the server",
      );
      expect(await cancelRequested(id)).toBe(false);
    } finally {
      await browser.close();
      await close(attacker);
      await open.close();
    }
  }, 120_000);

  it("after DNS rebinding (a host name now pointing at the server's port) reads and cancels nothing", async () => {
    const id = await idleRun();
    const browser = await launchChromium(["--host-resolver-rules=MAP rebind.example 127.0.0.1"]);
    // The attacker's page loads from rebind.example:P; then rebind.example:P is the run server (token off).
    const attacker = await serve("<!doctype html><body>hello</body>");
    const port = portOf(attacker);
    try {
      const page = await browser.newPage();
      await page.goto(`http://rebind.example:${port}/`);
      await close(attacker);
      const open = await startRunServer({ client: env.client, port, token: false });
      try {
        const answers = await page.evaluate(async (runId: string) => {
          const state = await fetch(`/runs/${runId}/events`);
          const cancel = await fetch(`/runs/${runId}/cancel`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: "{}",
          });
          return [state.status, cancel.status, ((await cancel.json()) as { error: string }).error];
        }, id);
        expect(answers.slice(0, 2)).toEqual([403, 403]);
        expect(answers[2]).toContain(`refused Host "rebind.example:${port}"`);
        expect(await cancelRequested(id)).toBe(false);
      } finally {
        await open.close();
      }
    } finally {
      await browser.close();
    }
  }, 120_000);
});

describe("the worker process", () => {
  it("npm run serve: prints the console URL with a minted token in its fragment; health and /metrics on loopback only", async () => {
    const outside = Object.values(networkInterfaces())
      .flat()
      .find((a) => a && a.family === "IPv4" && !a.internal)?.address;
    if (!outside) throw new Error("this test needs a non-loopback IPv4 interface to show health is not served there");
    const worker = await startSourceWorker(
      ["--task-queue", uniqueId("serve"), "--http-port", "0", "--health-port", "0"],
      { JAI_HTTP_TOKEN: "", TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS },
    );
    const output = worker.output();
    const [, base, token] = /runs API and console on (http:\/\/127\.0\.0\.1:\d+)\/#token=([\w-]+)/.exec(output) ?? [];
    expect(token).toBeDefined();
    expect(output.split(token).length).toBe(2); // printed once, in the fragment
    const missing = uniqueId("missing");
    expect((await send(base, `/runs/${missing}`)).status).toBe(401);
    expect((await send(base, `/runs/${missing}`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
    const healthPort = Number(/health on :(\d+)/.exec(output)![1]);
    expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).toBe(200);
    await expect(fetch(`http://${outside}:${healthPort}/metrics`)).rejects.toThrow();
    await within(worker.stop(), 60_000, "the worker to drain");
  }, 150_000);
});
