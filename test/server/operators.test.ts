/**
 * What operators see in the Temporal UI and visibility: a run that ends with
 * an error is Failed (its result still comes back through handle.result()),
 * the agent search attributes are kept up to date and can be queried, the
 * summary is the prompt's first line, and current details name the tool calls
 * waiting for approval. Real dev server (registered with the attributes), faux model.
 */
import { describe, expect, it } from "@jest/globals";
import { Client, WorkflowFailedError } from "@temporalio/client";
import { ApplicationFailure, defineSearchAttributeKey } from "@temporalio/common";
import { msToTs } from "@temporalio/common/lib/time.js";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import { searchAttributeCheck } from "../../src/worker/activities/namespace-attributes.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { WAITING_FOR_APPROVAL_QUERY } from "../../src/shared/search-attributes.js";
import { fauxModel, testWorker, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();

/** Visibility is eventually consistent: ask until the answer is there (bounded; not a synchronisation sleep). */
async function listUntil(query: string, wanted: (ids: string[]) => boolean): Promise<string[]> {
  const deadline = Date.now() + 20000;
  for (;;) {
    const ids: string[] = [];
    for await (const w of env.client.workflow.list({ query })) ids.push(w.workflowId);
    if (wanted(ids) || Date.now() > deadline) return ids;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const attrs = async (workflowId: string) =>
  (await env.client.workflow.getHandle(workflowId).describe()).typedSearchAttributes;
const key = <T extends Parameters<typeof defineSearchAttributeKey>[1]>(name: string, type: T) =>
  defineSearchAttributeKey(name, type);

const danger: AgentTool = {
  name: "delete_all",
  description: "Deletes everything",
  parameters: Type.Object({ path: Type.String() }),
  requiresApproval: true,
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `deleted ${args.path}` }] };
  },
};

describe("truthful status", () => {
  it("a run that ends with stopReason error is Failed in Temporal, and handle.result() still returns its result", async () => {
    const faux = fauxModel([fauxAssistantMessage([], { stopReason: "error", errorMessage: "invalid x-api-key" })]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("failed"),
      model: faux.getModel(),
      prompt: "hello\nsecond line",
    });
    const result = await worker.runUntil(handle.result());
    expect(result).toMatchObject({ stopReason: "error", errorMessage: "invalid x-api-key", turns: 1 });
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);

    const description = await handle.workflow.describe();
    expect(description.status.name).toBe("FAILED");
    // A raw Temporal client sees a typed, non-retryable failure carrying the result.
    const raw = await env.client.workflow
      .getHandle(handle.workflowId)
      .result()
      .catch((err: unknown) => err);
    expect(raw).toBeInstanceOf(WorkflowFailedError);
    const cause = (raw as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause.type).toBe("AgentRunFailed");
    expect(cause.nonRetryable).toBe(true);
    expect(cause.message).toBe("invalid x-api-key");
    expect(cause.details?.[0]).toMatchObject({ stopReason: "error", turns: 1 });

    // The closed run's state and transcript come from the failure's details.
    const state = await getAgentRun(env.client, handle.workflowId).state();
    expect(state).toMatchObject({
      status: "failed",
      stopReason: "error",
      errorMessage: "invalid x-api-key",
      turn: 1,
      messageCount: 2,
    });
    expect((await getAgentRun(env.client, handle.workflowId).transcript()).map((m) => m.role)).toEqual([
      "user",
      "assistant",
    ]);

    const sa = await attrs(handle.workflowId);
    expect(sa.get(key("AgentStatus", "KEYWORD"))).toBe("failed");
    expect(sa.get(key("AgentStopReason", "KEYWORD"))).toBe("error");
    const failedIds = await listUntil(
      `AgentStatus = "failed" AND WorkflowId = "${handle.workflowId}"`,
      (ids) => ids.length > 0,
    );
    expect(failedIds).toEqual([handle.workflowId]);
    expect(await description.staticSummary()).toBe("hello");
  });

  it("a run that ends well completes, with its outcome in the search attributes", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/tmp/x" }, { id: "d1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [{ ...danger, requiresApproval: false }]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("ok"),
      model: faux.getModel(),
      prompt: "  \n  Clean   up /tmp\nthen report",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const description = await handle.workflow.describe();
    expect(description.status.name).toBe("COMPLETED");
    expect(await description.staticSummary()).toBe("Clean up /tmp");
    const sa = description.typedSearchAttributes;
    expect(sa.get(key("AgentStatus", "KEYWORD"))).toBe("completed");
    expect(sa.get(key("AgentStopReason", "KEYWORD"))).toBe("stop");
    expect(sa.get(key("AgentModel", "KEYWORD"))).toBe(`${faux.getModel().provider}/${faux.getModel().id}`);
    expect(sa.get(key("AgentTools", "KEYWORD_LIST"))).toEqual(["delete_all"]);
    expect(sa.get(key("AgentTurns", "INT"))).toBe(2);
    expect(sa.get(key("AgentTotalTokens", "INT"))).toBe(result.usage.totalTokens);
    expect(sa.get(key("AgentCostUsd", "DOUBLE"))).toBe(result.usage.cost.total);
    // The summary as a search attribute too: the workflow sets it, however the run was started.
    expect(sa.get(key("AgentSummary", "TEXT"))).toBe("Clean up /tmp");
  });
});

describe("finding runs", () => {
  it(`the saved view's query (${WAITING_FOR_APPROVAL_QUERY}) finds a run waiting for approval, whose details name the call and its args`, async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/tmp/x" }, { id: "del-1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage("finished"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("waits"),
      model: faux.getModel(),
      prompt: "clean up",
    });
    const result = await worker.runUntil(async () => {
      const ids = await listUntil(
        `${WAITING_FOR_APPROVAL_QUERY} AND TaskQueue = "${taskQueue}"`,
        (found) => found.length > 0,
      );
      expect(ids).toEqual([handle.workflowId]);
      const metadata = (await handle.workflow.query("__temporal_workflow_metadata")) as { currentDetails?: string };
      expect(metadata.currentDetails).toMatch(/waiting_for_approval/);
      expect(metadata.currentDetails).toContain("Awaiting approval:\n\n- `delete_all /tmp/x` · id `del-1`");
      await handle.approve("del-1");
      return handle.result();
    });
    expect(result.stopReason).toBe("stop");
    expect(
      await listUntil(`${WAITING_FOR_APPROVAL_QUERY} AND TaskQueue = "${taskQueue}"`, (found) => found.length === 0),
    ).toEqual([]);
  });

  it("startAgentRun passes the caller's summary, memo and search attributes", async () => {
    const tenant = defineSearchAttributeKey("JaiTestTenant", "KEYWORD");
    await env.client.connection.operatorService
      .addSearchAttributes({ namespace: "default", searchAttributes: { JaiTestTenant: 2 /* KEYWORD */ } })
      .catch((err: Error) => {
        if (!/already exists/i.test(err.message)) throw err;
      });
    const faux = fauxModel([fauxAssistantMessage("hi")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("meta"),
      model: faux.getModel(),
      prompt: "hello",
      staticSummary: "nightly triage",
      staticDetails: "started by the **scheduler**",
      memo: { ticket: "OPS-1" },
      searchAttributes: [{ key: tenant, value: "acme" }],
    });
    await worker.runUntil(handle.result());
    const description = await handle.workflow.describe();
    expect(await description.staticSummary()).toBe("nightly triage");
    expect(await description.staticDetails()).toBe("started by the **scheduler**");
    // The caller's memo as it was: model, tools and outcome are in the search attributes, not repeated here.
    expect(description.memo).toEqual({ ticket: "OPS-1" });
    expect(description.typedSearchAttributes.get(tenant)).toBe("acme");
    expect(description.typedSearchAttributes.get(key("AgentStatus", "KEYWORD"))).toBe("completed");
    expect(description.typedSearchAttributes.get(key("AgentStopReason", "KEYWORD"))).toBe("stop");
    // Neither at the start nor at the end: no memo command in the run's history.
    const { events } = await handle.workflow.fetchHistory();
    expect(events?.filter((e) => e.workflowPropertiesModifiedEventAttributes)).toEqual([]);
  });

  it("a namespace without the agent search attributes still serves runs, and the memo carries model, tools and outcome", async () => {
    const namespace = uniqueId("plain");
    const service = env.client.connection.workflowService;
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs("1 day") });
    const client = new Client({ connection: env.client.connection, namespace });
    const faux = fauxModel([fauxAssistantMessage("done")]);
    const { worker, taskQueue } = await testWorker(env, [danger], { namespace });
    // A new namespace reaches every service of the server within its namespace-cache refresh.
    const deadline = Date.now() + 30000;
    let handle: Awaited<ReturnType<typeof startAgentRun>> | undefined;
    while (!handle) {
      try {
        handle = await startAgentRun(client, {
          taskQueue,
          workflowId: uniqueId("plain"),
          model: faux.getModel(),
          prompt: "go",
        });
      } catch (err) {
        if (!/namespace/i.test((err as Error).message) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const description = await handle.workflow.describe();
    expect(description.memo).toEqual({
      model: `${faux.getModel().provider}/${faux.getModel().id}`,
      tools: ["delete_all"],
      stopReason: "stop",
      turns: 1,
      totalTokens: result.usage.totalTokens,
    });
    expect(description.typedSearchAttributes.get(key("AgentStatus", "KEYWORD"))).toBeUndefined();
  }, 90000);

  it("a namespace without the attributes: the check says so and warns once", async () => {
    const warnings: string[] = [];
    const check = searchAttributeCheck(
      () => env.client,
      (line) => warnings.push(line),
    );
    expect(await check("default")).toBe(true);
    expect(await check("no-such-namespace")).toBe(false);
    expect(await check("no-such-namespace")).toBe(false);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /namespace "no-such-namespace" lacks the agent search attributes.*temporal operator search-attribute create/,
    );
  });
});
