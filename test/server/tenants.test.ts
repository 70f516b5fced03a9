/**
 * Tenants on a real server (docs/tenants.md): the tenant lands in the AgentTenant search attribute and in the
 * run's priority (WorkflowExecutionStarted `priority.fairnessKey`); its activities get the fairness key at dispatch
 * (inherited: their scheduled events carry none) and a sub-agent's child carries both. Limits: a tenant at its
 * maxConcurrentRuns is refused at start, a burst starts no more than the limit, a run that ends frees its place;
 * a tenant's default budget fills a run given none. A namespace without AgentTenant still starts runs. Over HTTP:
 * `POST /runs { agent, prompt, tenant }`, 400 for a hostile tenant, 429 at the limit, and a body cannot bring its
 * own limits.
 */
import { describe, expect, it } from "@jest/globals";
import { Client } from "@temporalio/client";
import { Context } from "@temporalio/activity";
import { msToTs, type Priority } from "@temporalio/common";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { InvalidRunInputError, startAgentRun } from "../../src/client/client.js";
import { agentTool } from "../../src/worker/subagents/agent-tool.js";
import { startRunServer } from "../../src/http/server.js";
import { listRunPage } from "../../src/http/run-list.js";
import { runningRunsQuery, TenantLimitError, type TenantsConfig } from "../../src/shared/tenants.js";
import { AgentTenant } from "../../src/shared/search-attributes.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, testWorker, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();

/** Starts a run on a queue no worker polls: it stays running, which is all a limit needs. */
const idle = (tenant: string, tenants?: TenantsConfig, extra: Record<string, unknown> = {}) =>
  startAgentRun(env.client, {
    taskQueue: uniqueId("idle"),
    model: "faux/none",
    prompt: "wait",
    tenant,
    ...(tenants ? { tenants } : {}),
    ...extra,
  });

async function startedEvent(client: Client, workflowId: string) {
  const { events } = await client.workflow.getHandle(workflowId).fetchHistory();
  return events![0].workflowExecutionStartedEventAttributes!;
}

/** Waits until visibility shows `n` running top-level runs of the tenant. */
async function visibleRunning(tenant: string, n: number) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { count } = await env.client.workflow.count(runningRunsQuery(tenant));
    if (count === n) return;
    if (Date.now() > deadline) throw new Error(`visibility shows ${count} running runs of ${tenant}, not ${n}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("tenants", () => {
  it("a run's tenant is its AgentTenant, its fairness key, its activities' and its sub-agent's", async () => {
    const tenant = uniqueId("acme").slice(0, 40);
    const seen: { activity: string; priority?: Priority }[] = [];
    const probe: AgentTool = {
      name: "probe",
      description: "records the activity's priority",
      parameters: Type.Object({}),
      execute: async () => {
        seen.push({ activity: Context.current().info.activityType, priority: Context.current().info.priority });
        return { content: [{ type: "text", text: "probed" }] };
      },
    };
    const child = fauxModel([
      fauxAssistantMessage([fauxToolCall("probe", {}, { id: "p2" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("child done"),
    ]);
    const researcher = agentTool({
      name: "researcher",
      description: "researches",
      model: child.getModel(),
      tools: ["probe"],
      maxTurns: 3,
    });
    const parent = fauxModel([
      fauxAssistantMessage(
        [fauxToolCall("probe", {}, { id: "p1" }), fauxToolCall("researcher", { prompt: "dig" }, { id: "r1" })],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("all done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [probe, researcher]);
    const workflowId = uniqueId("tenant-run");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: parent.getModel(),
      prompt: "go",
      tools: ["probe", "researcher"],
      tenant,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");

    const started = await startedEvent(env.client, workflowId);
    expect(started.priority?.fairnessKey).toBe(tenant);
    expect((await handle.workflow.describe()).typedSearchAttributes.get(AgentTenant)).toBe(tenant);
    // Activities carry no priority of their own in history: the server gives them the run's at dispatch.
    const { events } = await handle.workflow.fetchHistory();
    const scheduled = events!.filter((e) => e.activityTaskScheduledEventAttributes);
    expect(scheduled.length).toBeGreaterThan(0);
    for (const e of scheduled) expect(e.activityTaskScheduledEventAttributes!.priority?.fairnessKey ?? "").toBe("");
    // ... and they get it: the tool activities of the parent and of the child saw the tenant as their fairness key.
    expect(seen).toHaveLength(2);
    for (const s of seen) expect(s.priority?.fairnessKey).toBe(tenant);

    // The sub-agent's child: the same fairness key and search attribute.
    const childId = `${workflowId}/sub-1-1`;
    const childStarted = await startedEvent(env.client, childId);
    expect(childStarted.priority?.fairnessKey).toBe(tenant);
    expect((await env.client.workflow.getHandle(childId).describe()).typedSearchAttributes.get(AgentTenant)).toBe(
      tenant,
    );
    // The runs list shows the tenant and filters by it (the console's list, GET /runs?tenant=).
    const listed = await waitForValue(async () => {
      const page = await listRunPage(env.client, { tenant, pageSize: 50 });
      return page.runs.length >= 2 ? page : undefined;
    });
    expect(listed.runs.map((r) => r.workflowId).sort()).toEqual([workflowId, childId].sort());
    expect(listed.runs.every((r) => r.tenant === tenant)).toBe(true);
    expect((await listRunPage(env.client, { tenant: `${tenant}-other`, pageSize: 50 })).runs).toEqual([]);
  });

  it("a run without a tenant has no AgentTenant and no fairness key", async () => {
    const faux = fauxModel([fauxAssistantMessage("hi")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, { taskQueue, model: faux.getModel(), prompt: "go" });
    await worker.runUntil(handle.result());
    expect((await handle.workflow.describe()).typedSearchAttributes.get(AgentTenant)).toBeUndefined();
    expect((await startedEvent(env.client, handle.workflowId)).priority?.fairnessKey ?? "").toBe("");
  });

  it("fairnessWeight and the default budget of the tenant's config reach the run; a caller's own budget is kept", async () => {
    const tenant = uniqueId("weighted").slice(0, 40);
    const tenants: TenantsConfig = { [tenant]: { fairnessWeight: 2.5, budget: { maxToolCalls: 7 } } };
    const handle = await idle(tenant, tenants);
    const started = await startedEvent(env.client, handle.workflowId);
    expect(started.priority?.fairnessWeight).toBe(2.5);
    const input = JSON.parse(Buffer.from(started.input!.payloads![0].data!).toString()) as { budget?: unknown };
    expect(input.budget).toEqual({ maxToolCalls: 7 });
    const own = await idle(tenant, tenants, { budget: { maxToolCalls: 1 } });
    const ownInput = (await startedEvent(env.client, own.workflowId)).input!.payloads![0].data!;
    expect(JSON.parse(Buffer.from(ownInput).toString()).budget).toEqual({ maxToolCalls: 1 });
    await Promise.all([handle, own].map((h) => h.workflow.terminate("test over")));
  });

  it("a tenant at maxConcurrentRuns is refused at start; a burst starts no more than the limit; an ended run frees a place", async () => {
    const tenant = uniqueId("limited").slice(0, 40);
    const tenants: TenantsConfig = { [tenant]: { maxConcurrentRuns: 3 }, "*": { maxConcurrentRuns: 100 } };
    // A burst of 8 starts at once: visibility has seen none of them when they are checked.
    const settled = await Promise.allSettled(Array.from({ length: 8 }, () => idle(tenant, tenants)));
    const started = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
    const refused = settled.flatMap((s) => (s.status === "rejected" ? [s.reason as Error] : []));
    expect(started).toHaveLength(3);
    expect(refused).toHaveLength(5);
    for (const err of refused) {
      expect(err).toBeInstanceOf(TenantLimitError);
      expect(err.message).toMatch(
        new RegExp(`tenant "${tenant}" is at its limit: maxConcurrentRuns 3 \\(3 running\\)`),
      );
    }
    // An ended run frees its place at once, though visibility may still list it as running for a moment (this
    // client started it within the visibility grace: describe has the last word).
    await started[0].workflow.terminate("make room");
    const after = await idle(tenant, tenants);
    await visibleRunning(tenant, 3);
    // Later, from visibility alone (a client of its own: nothing recent in memory).
    const fresh = new Client({ connection: env.client.connection });
    await expect(
      startAgentRun(fresh, { taskQueue: uniqueId("idle"), model: "faux/none", prompt: "x", tenant, tenants }),
    ).rejects.toThrow(TenantLimitError);
    // Another tenant is not affected.
    const other = await idle(uniqueId("other").slice(0, 40), tenants);
    await Promise.all([...started.slice(1), other, after].map((h) => h.workflow.terminate("test over")));
  });

  it("hostile tenants are refused before anything starts", async () => {
    for (const tenant of [`a" OR AgentTenant="b`, "x".repeat(65), "ac\u0000me", "acme\r\n", ""]) {
      const workflowId = uniqueId("hostile");
      await expect(
        startAgentRun(env.client, { taskQueue: "nowhere", workflowId, model: "faux/x", prompt: "hi", tenant }),
      ).rejects.toThrow(InvalidRunInputError);
      await expect(env.client.workflow.getHandle(workflowId).describe()).rejects.toThrow(/not found/i);
    } // A raw body's searchAttributes that is not a list is a bad request, not a crash (HTTP 400, not 500).
    await expect(
      startAgentRun(env.client, {
        taskQueue: "nowhere",
        model: "faux/x",
        prompt: "hi",
        tenant: "acme",
        searchAttributes: { AgentStatus: ["x"] } as never,
      }),
    ).rejects.toThrow(/"searchAttributes" must be a list of \{ key, value \} pairs/);
  });

  it("a namespace without AgentTenant still starts a tenant's run, with its fairness key", async () => {
    const namespace = uniqueId("plain-tenant");
    await env.client.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs("1 day"),
    });
    const client = new Client({ connection: env.client.connection, namespace });
    const deadline = Date.now() + 30_000;
    let handle: Awaited<ReturnType<typeof startAgentRun>> | undefined;
    while (!handle) {
      try {
        handle = await startAgentRun(client, { taskQueue: "nowhere", model: "faux/x", prompt: "hi", tenant: "acme" });
      } catch (err) {
        if (!/namespace/i.test((err as Error).message) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    expect((await startedEvent(client, handle.workflowId)).priority?.fairnessKey).toBe("acme");
    expect((await handle.workflow.describe()).typedSearchAttributes.get(AgentTenant)).toBeUndefined();
    await handle.workflow.terminate("test over");
  });
});

describe("tenants over HTTP", () => {
  it("POST /runs takes a tenant by agent name and raw; refuses a hostile one (400) and one at its limit (429)", async () => {
    const taskQueue = uniqueId("http-idle");
    const tenant = uniqueId("http").slice(0, 40);
    const server = await startRunServer({
      client: env.client,
      port: 0,
      token: false,
      taskQueue,
      rawRuns: true,
      agents: [{ name: "greeter", model: "faux/none" }],
      tenants: { [tenant]: { maxConcurrentRuns: 2 } },
    });
    const post = async (body: unknown) => {
      const res = await fetch(`${server.url}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const ids: string[] = [];
    try {
      const byName = await post({ agent: "greeter", prompt: "hi", tenant });
      expect(byName.status).toBe(201);
      ids.push(String(byName.body.workflowId));
      const handle = env.client.workflow.getHandle(ids[0]);
      expect((await handle.describe()).typedSearchAttributes.get(AgentTenant)).toBe(tenant);
      expect((await startedEvent(env.client, ids[0])).priority?.fairnessKey).toBe(tenant);

      // Raw input: a body bringing its own limits ("tenants") does not replace the server's.
      const raw = await post({ model: "faux/none", prompt: "hi", tenant, tenants: { [tenant]: {} } });
      expect(raw.status).toBe(201);
      ids.push(String(raw.body.workflowId));

      const third = await post({ agent: "greeter", prompt: "hi", tenant });
      expect(third.status).toBe(429);
      expect(third.body).toMatchObject({ tenant, limit: "maxConcurrentRuns", max: 2, current: 2 });
      expect(String(third.body.error)).toMatch(/maxConcurrentRuns 2/);
      const rawThird = await post({ model: "faux/none", prompt: "hi", tenant, tenants: {} });
      expect(rawThird.status).toBe(429);

      for (const hostile of [`a" OR AgentTenant="b`, "t".repeat(65), "a\nb", 42]) {
        const res = await post({ agent: "greeter", prompt: "hi", tenant: hostile });
        expect(res.status).toBe(400);
        const rawRes = await post({ model: "faux/none", prompt: "hi", tenant: hostile });
        expect(rawRes.status).toBe(400);
      }
    } finally {
      await Promise.all(ids.map((id) => env.client.workflow.getHandle(id).terminate("test over")));
      await server.close();
    }
  });
});

/** Polls `read` until it gives a value (visibility lags a little behind the runs), at most 20 s. */
async function waitForValue<T>(read: () => Promise<T | undefined>): Promise<T> {
  const until = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error("the runs list never showed the tenant's runs");
    await new Promise((r) => setTimeout(r, 200));
  }
}
