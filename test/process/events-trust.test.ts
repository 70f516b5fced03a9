/**
 * Following runs, from the attacker's side: a worker identity in a run's
 * history says where its events may be read, never where the client's token
 * goes (handle.events() and `npm run watch`); a run server sending an endless
 * SSE frame is cut off and the run is followed from its history. Real server,
 * faux model.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it, jest } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentEvent } from "../../src/shared/contracts.js";
import { fauxModel, testWorker, uniqueId, within, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

const env = withServer();

/** An attacker's HTTP listener on loopback: records each request's headers and answers with `answer`. */
async function attacker(answer: (res: ServerResponse, nth: number) => void) {
  const requests: IncomingHttpHeaders[] = [];
  const server = createServer((req, res) => {
    requests.push(req.headers);
    req.resume();
    answer(res, requests.length);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A finished run served by a worker with `identity` (a forged `events=<url>` in it lands in the run's history). */
async function finishedRun(identity?: string): Promise<{ handle: AgentRunHandle; expected: AgentEvent[] }> {
  const { worker, taskQueue, events } = await testWorker(env, [], identity ? { workerOptions: { identity } } : {});
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("events-trust"),
    model: fauxModel([fauxAssistantMessage("Just text.")]).getModel(),
    prompt: "Hi",
  });
  await worker.runUntil(handle.result());
  // What a run no tap holds is rebuilt to: the onEvent sequence without token deltas.
  const expected = JSON.parse(JSON.stringify(events.filter((e) => e.type !== "message_update"))) as AgentEvent[];
  return { handle, expected };
}

async function collect(events: AsyncIterable<{ event: AgentEvent }>): Promise<AgentEvent[]> {
  const got: AgentEvent[] = [];
  for await (const { event } of events) got.push(event);
  return JSON.parse(JSON.stringify(got)) as AgentEvent[];
}

/** `npm run watch -- <id>` in its own process with `extraEnv`; resolves with what it printed. */
function watch(workflowId: string, extraEnv: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeEntry("src/cli/watch.ts"), workflowId], {
      env: { ...process.env, JAI_EVENTS_URL: "", JAI_EVENTS_TRUSTED_HOSTS: "", ...extraEnv },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    proc.stdout.on("data", (c: Buffer) => (out += c.toString()));
    proc.stderr.on("data", (c: Buffer) => (out += c.toString()));
    proc.on("error", reject);
    proc.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`watch exited ${code}: ${out}`))));
  });
}

describe("event stream clients trust configuration, not history", () => {
  it("a run server named by a forged worker identity gets no token, from handle.events() or watch; the run is read from history", async () => {
    const trap = await attacker((res) => res.writeHead(401, { "content-type": "application/json" }).end("{}"));
    const savedToken = process.env.JAI_HTTP_TOKEN;
    try {
      const { handle, expected } = await finishedRun(`evil@attacker events=${trap.url}`);
      process.env.JAI_HTTP_TOKEN = "env-token";
      const fromEnv = await within(collect(handle.events()).catch(String), 60_000, "events with the env token");
      const given = await within(
        collect(handle.events({ token: "option-token" })).catch(String),
        60_000,
        "events, token given",
      );
      const printed = await within(
        watch(handle.workflowId, { JAI_HTTP_TOKEN: "watch-token" }).catch(String),
        60_000,
        "watch",
      );
      // The clients did go to the URL history named (the attack was live), without a token.
      expect(trap.requests.map((h) => h.authorization)).toEqual([undefined, undefined, undefined]);
      // And followed the run from its history instead.
      expect(fromEnv).toEqual(expected);
      expect(given).toEqual(expected);
      expect(printed).toContain("Just text.");
    } finally {
      if (savedToken === undefined) delete process.env.JAI_HTTP_TOKEN;
      else process.env.JAI_HTTP_TOKEN = savedToken;
      await trap.close();
    }
  }, 120_000);

  it("a host the client trusts (trustedHosts, JAI_EVENTS_TRUSTED_HOSTS) gets the token", async () => {
    const server = await attacker((res) => res.writeHead(401).end());
    try {
      const { handle } = await finishedRun(`w@host events=${server.url}`);
      await expect(collect(handle.events({ token: "t1", trustedHosts: [`127.0.0.1:${server.port}`] }))).rejects.toThrow(
        /HTTP 401/,
      );
      process.env.JAI_EVENTS_TRUSTED_HOSTS = "other.example, 127.0.0.1";
      await expect(collect(handle.events({ token: "t2" }))).rejects.toThrow(/HTTP 401/);
      // Another port of a trusted host:port entry is not that entry.
      delete process.env.JAI_EVENTS_TRUSTED_HOSTS;
      await collect(handle.events({ token: "t3", trustedHosts: [`127.0.0.1:${server.port + 1}`] }));
      expect(server.requests.map((h) => h.authorization)).toEqual(["Bearer t1", "Bearer t2", undefined]);
    } finally {
      delete process.env.JAI_EVENTS_TRUSTED_HOSTS;
      await server.close();
    }
  }, 90_000);

  it("an endless SSE frame is cut off at the cap, not buffered: the stream is aborted and the run read from history", async () => {
    const LIMIT = 64 * 1024 * 1024;
    let written = 0;
    let closedEarly = false;
    const chunk = "x".repeat(64 * 1024);
    // Real events first (the run's first three), then a frame that never ends.
    let prefix: AgentEvent[] = [];
    const flood = await attacker((res, nth) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // A client that came back for more gets an end: the test finishes either way.
      if (nth > 1) return void res.end("event: end\ndata: {}\n\n");
      res.on("close", () => (closedEarly = written < LIMIT));
      for (const [i, event] of prefix.entries())
        res.write(`event: agent\nid: t${i}\ndata: ${JSON.stringify(event)}\n\n`);
      res.write("event: agent\nid: t9\ndata: ");
      const pump = () => {
        while (written < LIMIT && !res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        if (!res.destroyed) res.end();
      };
      pump();
    });
    const warned = jest.spyOn(process, "emitWarning").mockImplementation(() => {});
    try {
      const { handle, expected } = await finishedRun();
      prefix = expected.slice(0, 3);
      const got = await within(collect(handle.events({ url: flood.url })), 60_000, "events");
      expect(closedEarly).toBe(true);
      // What was sent before the client hung up: the cap plus what sockets buffer, far from the flood's 64 MiB.
      expect(written).toBeLessThan(16 * 1024 * 1024); // the 4 MiB cap
      expect(warned.mock.calls.map((c) => String(c[0])).join("\n")).toMatch(/a frame passed \d+ bytes without ending/);
      // The three from the stream, then the rest from history: none twice, none missing.
      expect(got).toEqual(expected);
      expect(flood.requests).toHaveLength(1);
    } finally {
      warned.mockRestore();
      await flood.close();
    }
  }, 90_000);
});
