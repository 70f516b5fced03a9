/**
 * Approval policies and client tools over HTTP (issue #41), against an in-process run server with a token:
 * `POST /runs/:id/approve { toolCallId, remember }` stops asking for the tool, `POST /runs/:id/policy`
 * sets the policy (a malformed one: 400 naming the field, nothing sent), `POST /runs/:id/tool-result`
 * submits a client tool's result (one its schema refuses: 409 with the run's reason, the call keeps waiting).
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { startRunServer, type RunServer } from "../../src/http/server.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, stateWhen, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();
const TOKEN = "policies-test-token-0123456789";
let server: RunServer;
let taskQueue: string;
let worker: Awaited<ReturnType<typeof testWorker>>["worker"];
let running: Promise<void>;
const ran: string[] = [];

const deleteAll: AgentTool = {
  name: "delete_all",
  description: "Deletes a path",
  parameters: Type.Object({ path: Type.String() }),
  requiresApproval: true,
  async execute(_id, args: any) {
    ran.push(args.path);
    return { content: [{ type: "text", text: `deleted ${args.path}` }] };
  },
};

const toolResults = (context: Context) =>
  context.messages
    .filter((m) => m.role === "toolResult")
    .map((m) => textOf(m))
    .join(" | ");

const api = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });

describe("the run API: policies and client tools", () => {
  beforeAll(async () => {
    ({ worker, taskQueue } = await testWorker(env, [deleteAll]));
    running = worker.run();
    server = await startRunServer({ client: env.client, port: 0, token: TOKEN, taskQueue });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    worker?.shutdown();
    await running;
  });

  it("approve { remember } stops asking for the tool; policy sets the policy, a malformed one is 400", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/a" }, { id: "d-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/b" }, { id: "d-2" })], { stopReason: "toolUse" }),
      (context) => fauxAssistantMessage(`saw: ${toolResults(context)}`),
    ]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("http-policy"),
      model: faux.getModel(),
      prompt: "clean",
    });
    const id = handle.workflowId;
    await stateWhen(handle, (s) => s.pendingApprovals.length === 1, "d-1 waiting for approval");

    const bad = await api(`/runs/${id}/policy`, { policy: { rules: [{ match: "x", action: "maybe" }] } });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toContain(`"policy.rules[0].action" must be one of`);
    expect((await handle.state()).approvalPolicy).toBeUndefined();
    expect((await api(`/runs/${id}/approve`, { remember: true })).status).toBe(400); // no toolCallId

    const policy = { rules: [{ match: "delete_*", action: "ask" }], default: "allow" };
    const set = await api(`/runs/${id}/policy`, { policy });
    expect(set.status).toBe(200);
    expect((await set.json()).policy).toMatchObject(policy);
    expect((await handle.state()).approvalPolicy).toMatchObject(policy);

    const approved = await api(`/runs/${id}/approve`, { toolCallId: "d-1", remember: true });
    expect(approved.status).toBe(200);
    // d-2 (an `ask` rule) runs without asking: the tool was remembered.
    const result = await handle.result();
    expect(ran).toEqual(["/a", "/b"]);
    expect(textOf(result.messages.at(-1))).toBe("saw: deleted /a | deleted /b");
  }, 60_000);

  it("tool-result: a result the schema refuses is 409 with the reason and the call keeps waiting; a good one completes it", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("pick_color", {}, { id: "c-1" })], { stopReason: "toolUse" }),
      (context) => fauxAssistantMessage(`saw: ${toolResults(context)}`),
    ]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("http-tool-result"),
      model: faux.getModel(),
      prompt: "pick",
      clientTools: [
        {
          name: "pick_color",
          description: "Asks the user to pick a color",
          parameters: { type: "object", properties: {} },
          result: { type: "object", properties: { color: { enum: ["red", "blue"] } }, required: ["color"] },
        },
      ],
    });
    const id = handle.workflowId;
    await stateWhen(handle, (s) => (s.pendingClientResults ?? []).length === 1, "c-1 waiting for the client");

    const refused = await api(`/runs/${id}/tool-result`, { toolCallId: "c-1", result: { color: "green" } });
    expect(refused.status).toBe(409);
    const body = await refused.json();
    expect(body.update).toBe("submitToolResult");
    expect(body.reason).toMatch(/color/);
    expect((await api(`/runs/${id}/tool-result`, { result: { color: "red" } })).status).toBe(400); // no toolCallId
    const unknown = await api(`/runs/${id}/tool-result`, { toolCallId: "nope", result: { color: "red" } });
    expect(unknown.status).toBe(409);
    expect((await handle.state()).pendingClientResults).toMatchObject([{ toolCallId: "c-1" }]);

    const ok = await api(`/runs/${id}/tool-result`, { toolCallId: "c-1", result: { color: "blue" } });
    expect(ok.status).toBe(200);
    expect(textOf((await handle.result()).messages.at(-1))).toBe('saw: {"color":"blue"}');
  }, 60_000);
});
