/**
 * The run API and console list, from the attacker's side (an adversarial review's findings):
 * - a "#" in the request line: the router ends the path there, so "/runs/<id>#/console" was taken for a page
 *   (no token) and served the run's state;
 * - with named agents configured, raw run input let a token holder start any model, tools and queue;
 * - the list's text filter reached the visibility store as a full-text expression (a lone quote: a 500 naming
 *   the store's SQL);
 * - more runs waiting for approval than a page left the unfiltered list below them empty.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import net from "node:net";
import { Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { startRunServer, type RunServer } from "../../src/http/server.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, testWorker, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();
const TOKEN = "attacks-test-token-0123456789";
let server: RunServer;
let taskQueue: string;
let worker: Awaited<ReturnType<typeof testWorker>>["worker"];
let running: Promise<void>;
let waitingIds: string[] = [];
let doneId: string;
const marker = uniqueId("marker").replace(/-/g, "");

const gated: AgentTool = {
  name: "gated",
  description: "Needs a person",
  parameters: Type.Object({}),
  requiresApproval: true,
  execute: async () => ({ content: [{ type: "text", text: "ran" }] }),
};

// The worker and the run server stop in this block's afterAll, before withServer() closes the connection.
describe("the run API under attack", () => {
  beforeAll(async () => {
    const faux = fauxModel([]);
    faux.setResponses(
      Array.from({ length: 8 }, () => (ctx: any) => {
        const prompt = JSON.stringify(ctx.messages[0]?.content ?? "");
        return prompt.includes("wait")
          ? { role: "assistant", content: [{ type: "toolCall", id: uniqueId("c"), name: "gated", arguments: {} }] }
          : { role: "assistant", content: [{ type: "text", text: "done" }] };
      }) as any,
    );
    ({ worker, taskQueue } = await testWorker(env, [gated], { models: [faux.getModel()] }));
    running = worker.run();
    const model = `${faux.getModel().provider}/${faux.getModel().id}`;
    server = await startRunServer({
      client: env.client,
      port: 0,
      token: TOKEN,
      taskQueue,
      agents: [{ name: "safe", model, tools: ["gated"] }],
    });
    const start = (prompt: string) =>
      startAgentRun(env.client, { taskQueue, workflowId: uniqueId("attack"), model: faux.getModel(), prompt });
    const waiting = await Promise.all([start(`wait ${marker} one`), start(`wait ${marker} two`)]);
    waitingIds = waiting.map((h) => h.workflowId);
    const done = await start(`finish ${marker}`);
    doneId = done.workflowId;
    await done.result();
    for (const h of waiting)
      for (;;) {
        if ((await h.state()).pendingApprovals.length) break;
        await new Promise((r) => setTimeout(r, 100));
      }
  }, 60_000);

  afterAll(async () => {
    await Promise.all(
      waitingIds.map((id) =>
        env.client.workflow
          .getHandle(id)
          .terminate()
          .catch(() => {}),
      ),
    );
    await server?.close();
    worker?.shutdown();
    await running;
  });

  /** Sends `line` as the request line, byte for byte (fetch would drop the fragment). */
  function rawGet(target: string): Promise<{ status: number; body: string }> {
    const { port } = new URL(server.url);
    return new Promise((resolve, reject) => {
      const socket = net.connect(Number(port), "127.0.0.1", () =>
        socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`),
      );
      let data = "";
      socket.on("data", (d) => (data += d));
      socket.on("end", () => {
        const [head, ...body] = data.split("\r\n\r\n");
        resolve({ status: Number(head.split(" ")[1]), body: body.join("\r\n\r\n") });
      });
      socket.on("error", reject);
    });
  }

  const api = (path: string, init: RequestInit = {}, token: string | undefined = TOKEN) =>
    fetch(`${server.url}${path}`, {
      ...init,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(init.body ? { "content-type": "application/json" } : {}),
      },
    });

  describe("the token", () => {
    it("is needed for a run's state however the path is cut: a fragment in the request line is refused", async () => {
      const id = waitingIds[0];
      expect((await rawGet(`/runs/${id}`)).status).toBe(401);
      const probe = await rawGet(`/runs/${id}#/console`);
      expect(probe.status).toBe(400);
      expect(probe.body).not.toContain("pendingApprovals");
      // The pages themselves still load without it (they hold no data).
      expect((await rawGet(`/runs/${id}/console`)).status).toBe(200);
    });
  });

  describe("named agents", () => {
    it("are all a token holder can start: raw run input is refused unless the server takes it", async () => {
      const raw = await api("/runs", {
        method: "POST",
        body: JSON.stringify({ prompt: "hi", model: "faux/other", tools: ["shell"], taskQueue: "another-fleet" }),
      });
      expect(raw.status).toBe(403);
      expect((await raw.json()).error).toContain("configured agents only");
      const byName = await api("/runs", { method: "POST", body: JSON.stringify({ agent: "safe", prompt: "finish" }) });
      expect(byName.status).toBe(201);
      const open = await startRunServer({
        client: env.client,
        port: 0,
        token: TOKEN,
        taskQueue,
        agents: [],
        rawRuns: false,
      });
      try {
        // Without agents, raw input is the API: an invalid body is a 400, not a refusal.
        const res = await fetch(`${open.url}/runs`, {
          method: "POST",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: JSON.stringify({ prompt: 3 }),
        });
        expect(res.status).toBe(400);
      } finally {
        await open.close();
      }
    });
  });

  describe("the runs list", () => {
    it("reads the text filter as words: quotes and operators neither fail nor widen the match", async () => {
      for (const text of [`a"b`, `${marker} OR nothing`, `"${marker}`, `-${marker}`, `${marker}*`, `NEAR(${marker})`]) {
        const res = await api(`/runs?text=${encodeURIComponent(text)}`);
        expect(res.status).toBe(200);
        const body = await res.json();
        expect(JSON.stringify(body)).not.toMatch(/fts5|SQL|syntax/i);
      }
    });

    it("below more pinned runs than a page holds, lists the other runs, and never a pinned one twice", async () => {
      let page: { pinned: { workflowId: string }[]; runs: { workflowId: string }[] } = { pinned: [], runs: [] };
      for (let i = 0; i < 100; i++) {
        page = await (await api(`/runs?pageSize=1&text=${marker}`)).json();
        if (page.pinned.length === 2 && page.runs.length === 1) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(page.pinned.map((r) => r.workflowId).sort()).toEqual([...waitingIds].sort());
      expect(page.runs.map((r) => r.workflowId)).toEqual([doneId]);
    });
  });
});
