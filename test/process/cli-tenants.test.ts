/**
 * `jai-agent start --tenant` (docs/tenants.md): a configured agent started for a tenant gets the AgentTenant search
 * attribute and the fairness key, and the config's `tenants` apply: the default budget fills the run, and a second
 * start of a tenant at its maxConcurrentRuns exits 3 naming the limit. A hostile tenant exits 2 before anything
 * starts, by agent or plain. No worker serves the queue: the runs stay running, which is what a limit counts.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { runningRunsQuery } from "../../src/shared/tenants.js";
import { AgentTenant } from "../../src/shared/search-attributes.js";
import { openTestEnv, uniqueId, type TestEnv } from "../support/helpers.js";
import { jaiAgent } from "../support/cli.js";

const CONFIG = "test/fixtures/tenants-config.ts";

let env: TestEnv;
const started: string[] = [];
beforeAll(async () => {
  env = await openTestEnv();
}, 60_000);
afterAll(async () => {
  await Promise.all(
    started.map((id) =>
      env.client.workflow
        .getHandle(id)
        .terminate("test over")
        .catch(() => {}),
    ),
  );
  await env?.close();
});

const startFor = (tenant: string, taskQueue: string) =>
  jaiAgent([
    "start",
    "--agent",
    "greeter",
    "--config",
    CONFIG,
    "--task-queue",
    taskQueue,
    "--tenant",
    tenant,
    "--json",
    "hello",
  ]);

describe("jai-agent start --tenant", () => {
  it("sets the tenant, applies the config's budget, and refuses a second run of a tenant at its limit (exit 3)", async () => {
    const tenant = uniqueId("cli").slice(0, 40);
    const taskQueue = uniqueId("cli-tenants");
    const first = await startFor(tenant, taskQueue);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const out = JSON.parse(first.stdout) as { workflowId: string; tenant: string };
    started.push(out.workflowId);
    expect(out.tenant).toBe(tenant);
    const handle = env.client.workflow.getHandle(out.workflowId);
    expect((await handle.describe()).typedSearchAttributes.get(AgentTenant)).toBe(tenant);
    const { events } = await handle.fetchHistory();
    const startedEvent = events![0].workflowExecutionStartedEventAttributes!;
    expect(startedEvent.priority?.fairnessKey).toBe(tenant);
    const input = JSON.parse(Buffer.from(startedEvent.input!.payloads![0].data!).toString()) as { budget?: unknown };
    expect(input.budget).toEqual({ maxToolCalls: 4 });

    // Another process: it sees the first run through visibility, once visibility has it.
    const deadline = Date.now() + 20_000;
    while ((await env.client.workflow.count(runningRunsQuery(tenant))).count < 1) {
      if (Date.now() > deadline) throw new Error("visibility never showed the first run");
      await new Promise((r) => setTimeout(r, 100));
    }
    const second = await startFor(tenant, taskQueue);
    expect(second.code).toBe(3);
    expect(second.stderr).toMatch(
      new RegExp(`tenant "${tenant}" is at its limit: maxConcurrentRuns 1 \\(1 running\\)`),
    );
    expect(second.stdout).toBe("");

    // `jai-agent runs --tenant` lists the tenant's runs (visibility has the first by now); a hostile name exits 2.
    const listed = await jaiAgent(["runs", "--tenant", tenant, "--json"]);
    expect(listed.code).toBe(0);
    expect((JSON.parse(listed.stdout) as { workflowId: string }[]).map((r) => r.workflowId)).toEqual([out.workflowId]);
    const none = await jaiAgent(["runs", "--tenant", `${tenant}x`, "--json"]);
    expect(JSON.parse(none.stdout)).toEqual([]);
    const hostile = await jaiAgent(["runs", "--tenant", `a" OR AgentTenant="b`]);
    expect(hostile.code).toBe(2);
    expect(hostile.stderr).toMatch(/--tenant: "tenant" must be 1-64 letters/);
  }, 120_000);

  it("a hostile tenant exits 2 before anything starts, by agent and plain", async () => {
    for (const tenant of [`a" OR AgentTenant="b`, "a\tb"]) {
      const byAgent = await startFor(tenant, uniqueId("never"));
      expect(byAgent.code).toBe(2);
      expect(byAgent.stderr).toMatch(/"tenant" must be 1-64 letters, digits/);
      expect(byAgent.stderr).toMatch(/--tenant <name>/);
      const plain = await jaiAgent(["start", "--tenant", tenant, "hello"]);
      expect(plain.code).toBe(2);
      expect(plain.stderr).toMatch(/"tenant" must be 1-64 letters, digits/);
    }
  }, 120_000);

  it("start --budget: a bad one exits 2 naming the field; a run past it ends with the limit said", async () => {
    const bad = await jaiAgent(["start", "--budget", '{"maxTokens":0}', "hello"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--budget: "budget.maxTokens" must be a positive integer/);
    const notJson = await jaiAgent(["start", "--budget", "lots", "hello"]);
    expect(notJson.code).toBe(2);
    expect(notJson.stderr).toMatch(/--budget must be JSON/);
    // The offline demo model lists the workspace, then reads three files in parallel: one tool call is allowed.
    const ran = await jaiAgent(["start", "--budget", '{"maxToolCalls":1}', "What files are here?"]);
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/✗ read_file: Budget: maxToolCalls 1 reached/);
    expect(ran.stdout).toMatch(/Done: budget after 2 turn\(s\)/);
    expect(ran.stdout).toMatch(/^Budget: maxToolCalls 1 reached \(the calls past it were not run\)$/m);
  }, 120_000);
});
