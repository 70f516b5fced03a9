/**
 * A named agent's approval policy is a floor (issue #53, rows 4 and 5), from the attacker's side, on the real dev
 * server with an in-process run server and a token:
 * - a token holder (the person the agent restricts) loosens a running agent run's policy over the run API and,
 *   as any Temporal client, with the raw update, then approves with `remember`: the agent's denied tool never
 *   runs, and a tool with `requiresApproval` still asks (the agent without a rule for it leaves it to the tool);
 * - the model of an agent's run (a prompt injection) calls a sub-agent tool whose child has the denied tool: the
 *   child inherits the parent's policy as its floor and never runs it, even when a person approved the
 *   sub-agent's call with `remember`; a raw run's policy reaches its sub-agents the same way.
 * Decided from the runs' transcripts, states and the tool's own record of its calls, never from timing.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { defaultPayloadConverter } from "@temporalio/common";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type, type Model } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import { startRunServer, type RunServer } from "../../src/http/server.js";
import { agentTool } from "../../src/worker/subagents/agent-tool.js";
import type { AgentMessage, AgentRunInput, AgentTool, ApprovalPolicy } from "../../src/shared/contracts.js";
import { fauxModel, stateWhen, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();
const TOKEN = "policy-floor-test-token-0123456789";
let server: RunServer;
let taskQueue: string;
let worker: Awaited<ReturnType<typeof testWorker>>["worker"];
let running: Promise<void>;

/** Every call of a tool, by tool-call id, as the tool itself saw it. */
const ran: string[] = [];
const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
const deploy: AgentTool = {
  name: "deploy",
  description: "Deploys to production",
  parameters: Type.Object({}),
  async execute(id) {
    ran.push(`deploy:${id}`);
    return text("deployed");
  },
};
const status: AgentTool = {
  name: "status",
  description: "Reads the production status",
  parameters: Type.Object({}),
  requiresApproval: true,
  async execute(id) {
    ran.push(`status:${id}`);
    return text("all green");
  },
};

const DENIAL = "guarded never deploys";
const guardedPolicy: ApprovalPolicy = { rules: [{ match: "deploy", action: "deny", reason: DENIAL }] };
const delegatorPolicy: ApprovalPolicy = {
  rules: [
    { match: "deploy", action: "deny", reason: DENIAL },
    { match: "helper", action: "ask" },
  ],
};
const floorDenial = (reason = DENIAL) =>
  `Tool call denied by the approval policy this run cannot loosen (rule 1, tool deploy): ${reason}`;

/** A faux model an agent names as "provider/id": a provider of its own, so the worker's models tell them apart. */
function namedModel(provider: string, responses: Parameters<typeof fauxModel>[0]) {
  const faux = registerFauxProvider({ provider: uniqueId(provider) });
  faux.setResponses(responses);
  return faux;
}

// Each run has models of its own: scripted answers in the order the run asks for them.
const guardedModel = namedModel("guarded", [
  fauxAssistantMessage("ready"),
  fauxAssistantMessage([fauxToolCall("deploy", {}, { id: "d-1" }), fauxToolCall("status", {}, { id: "s-1" })], {
    stopReason: "toolUse",
  }),
  fauxAssistantMessage("second prompt answered"),
  fauxAssistantMessage([fauxToolCall("deploy", {}, { id: "d-2" })], { stopReason: "toolUse" }),
  fauxAssistantMessage("third prompt answered"),
]);
const delegatorModel = namedModel("delegator", [
  fauxAssistantMessage([fauxToolCall("helper", { prompt: "deploy it" }, { id: "h-1" })], { stopReason: "toolUse" }),
  fauxAssistantMessage("delegated"),
]);
const rawParentModel = fauxModel([
  fauxAssistantMessage([fauxToolCall("helper2", { prompt: "deploy it" }, { id: "h-2" })], { stopReason: "toolUse" }),
  fauxAssistantMessage("delegated"),
]);
/** A child that does what the injected prompt asks: deploy, then report what it got. */
const deployingChild = () =>
  fauxModel([
    fauxAssistantMessage([fauxToolCall("deploy", {}, { id: "c-d" })], { stopReason: "toolUse" }),
    fauxAssistantMessage("child done"),
  ]);
const childModel = deployingChild();
const rawChildModel = deployingChild();
const helper = agentTool({
  name: "helper",
  description: "Does a task",
  model: childModel.getModel(),
  tools: ["deploy"],
  maxTurns: 3,
});
const helper2 = agentTool({
  name: "helper2",
  description: "Does a task",
  model: rawChildModel.getModel(),
  tools: ["deploy"],
  maxTurns: 3,
});

const ref = (model: Model<any>) => `${model.provider}/${model.id}`;
const api = async (path: string, body: unknown) => {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
};
/** A run's input as its history recorded it (what its parent started it with). */
const recordedInput = async (workflowId: string) => {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
  return defaultPayloadConverter.fromPayload(payload!) as AgentRunInput;
};
/** The deploys that ran since `from` calls of any tool had (each test's own). */
const deploysSince = (from: number) => ran.slice(from).filter((r) => r.startsWith("deploy:"));
const resultOf = (messages: AgentMessage[], id: string) => {
  const m = messages.find((x) => x.role === "toolResult" && x.toolCallId === id);
  return m && m.role === "toolResult" ? [m.isError, textOf(m)] : undefined;
};

describe("a named agent's policy is a floor", () => {
  beforeAll(async () => {
    const models = [guardedModel.getModel(), delegatorModel.getModel()];
    ({ worker, taskQueue } = await testWorker(env, [deploy, status, helper, helper2], { models }));
    running = worker.run();
    server = await startRunServer({
      client: env.client,
      port: 0,
      token: TOKEN,
      taskQueue,
      agents: [
        {
          name: "guarded",
          model: ref(guardedModel.getModel()),
          tools: ["deploy", "status"],
          session: true,
          approvalPolicy: guardedPolicy,
        },
        {
          name: "delegator",
          model: ref(delegatorModel.getModel()),
          tools: ["helper"],
          approvalPolicy: delegatorPolicy,
        },
      ],
    });
  }, 60_000);

  afterAll(async () => {
    await server?.close();
    worker?.shutdown();
    await running;
  });

  it("a token holder cannot loosen it over the run API or with the raw update, and remember cannot beat its deny", async () => {
    const seen = ran.length;
    const started = await api("/runs", { agent: "guarded", prompt: "hello" });
    expect(started.status).toBe(201);
    const id = started.body.workflowId as string;
    const handle = getAgentRun(env.client, id);
    await stateWhen(handle, (s) => s.status === "waiting_for_prompt", "the session to wait for its second prompt");

    // The request: answered 200 before and after the fix; the policy is the run's own layer, over the floor.
    const loosened = await api(`/runs/${id}/policy`, { policy: { default: "allow" } });
    expect(loosened.status).toBe(200);
    const afterRoute = await handle.state();

    // Second prompt: deploy (the agent denies it) and status (requiresApproval: the agent leaves it to the tool).
    const second = api(`/runs/${id}/prompt`, { message: "deploy now" });
    const asked = await stateWhen(
      handle,
      (s) => s.pendingApprovals.length > 0 || (s.status === "waiting_for_prompt" && s.turn >= 3),
      "status to ask, or the prompt to be answered",
    );
    const statusAsked = asked.pendingApprovals.map((a) => a.toolCallId);
    if (statusAsked.length) expect((await api(`/runs/${id}/approve`, { toolCallId: "s-1" })).status).toBe(200);
    expect((await within(second, 30_000, "the second prompt's answer")).status).toBe(200);

    // Any Temporal client may send the update itself: the run, not the route, keeps the floor.
    await handle.workflow.executeUpdate("setApprovalPolicy", {
      args: [{ rules: [{ match: "deploy", action: "ask" }], default: "allow" }],
    });
    // Third prompt: deploy again; a waiting call would be approved with "remember" by the attacker.
    const third = api(`/runs/${id}/prompt`, { message: "deploy again" });
    const decided = await stateWhen(
      handle,
      (s) => s.pendingApprovals.length > 0 || (s.status === "waiting_for_prompt" && s.turn >= 5),
      "deploy to ask, or the prompt to be answered",
    );
    const deployAsked = decided.pendingApprovals.map((a) => a.toolCallId);
    for (const toolCallId of deployAsked)
      expect((await api(`/runs/${id}/approve`, { toolCallId, remember: true })).status).toBe(200);
    expect((await within(third, 30_000, "the third prompt's answer")).status).toBe(200);

    const transcript = await handle.transcript();
    const final = await handle.state();
    await handle.close();
    await within(handle.result(), 30_000, "the session to close");
    expect(deploysSince(seen)).toEqual([]);
    expect(resultOf(transcript, "d-1")).toEqual([true, floorDenial()]);
    expect(resultOf(transcript, "d-2")).toEqual([true, floorDenial()]);
    expect(deployAsked).toEqual([]); // denied outright: nothing to approve, nothing to remember
    expect(statusAsked).toEqual(["s-1"]); // "allow" did not switch off the tool's requiresApproval either
    expect(resultOf(transcript, "s-1")).toEqual([false, "all green"]);
    // The run shows both layers: the policy a token holder set, and the floor it could not lower.
    expect(afterRoute.approvalPolicy).toEqual({ default: "allow" });
    expect(afterRoute.approvalPolicyFloor).toEqual([guardedPolicy]);
    expect(final.approvalPolicyFloor).toEqual([guardedPolicy]);
    expect(final.approvalPolicy).toEqual({ rules: [{ match: "deploy", action: "ask" }], default: "allow" });
  }, 90_000);

  it("a sub-agent cannot run its parent's denied tool, even when a person approved the call that started it", async () => {
    const seen = ran.length;
    const started = await api("/runs", { agent: "delegator", prompt: "ship it" });
    expect(started.status).toBe(201);
    const id = started.body.workflowId as string;
    const handle = getAgentRun(env.client, id);
    await stateWhen(handle, (s) => s.pendingApprovals.some((a) => a.toolCallId === "h-1"), "helper to ask");
    expect((await api(`/runs/${id}/approve`, { toolCallId: "h-1", remember: true })).status).toBe(200);
    const result = await within(handle.result(), 60_000, "the parent run");
    expect(resultOf(result.messages, "h-1")).toEqual([false, "child done"]);

    const child = getAgentRun(env.client, `${id}/sub-1-0`);
    const childResult = await within(child.result(), 30_000, "the child run");
    expect(deploysSince(seen)).toEqual([]);
    expect(resultOf(childResult.messages, "c-d")).toEqual([true, floorDenial()]);
    expect((await recordedInput(`${id}/sub-1-0`)).approvalPolicyFloor).toEqual([delegatorPolicy]);
  }, 90_000);

  it("a raw run's policy reaches its sub-agents too", async () => {
    const seen = ran.length;
    const policy: ApprovalPolicy = { rules: [{ match: "deploy", action: "deny", reason: "not from here" }] };
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("raw-parent"),
      model: rawParentModel.getModel(),
      prompt: "ship it",
      tools: ["helper2"],
      approvalPolicy: policy,
    });
    const result = await within(handle.result(), 60_000, "the parent run");
    expect(resultOf(result.messages, "h-2")).toEqual([false, "child done"]);
    const child = getAgentRun(env.client, `${handle.workflowId}/sub-1-0`);
    const childResult = await within(child.result(), 30_000, "the child run");
    expect(deploysSince(seen)).toEqual([]);
    expect(resultOf(childResult.messages, "c-d")).toEqual([true, floorDenial("not from here")]);
    expect((await recordedInput(`${handle.workflowId}/sub-1-0`)).approvalPolicyFloor).toEqual([policy]);
  }, 90_000);
});
