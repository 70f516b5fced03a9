/**
 * A call waiting for a client is visible (issue #41): `state().status` and the AgentStatus search attribute say
 * "waiting_for_client" while a client tool call waits and nothing else of its batch runs ("running" while a
 * worker tool beside it still runs), the console's "waiting" filter lists the run, and the status returns to
 * "running" / "completed" once the result is in. A run records no patch of its own for it: baseline v4 covers it.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import { listRunPage } from "../../src/http/run-list.js";
import type { AgentRunState, ClientToolDeclaration } from "../../src/shared/contracts.js";
import { BASELINE_PATCH, RUN_SCHEMAS_PATCH } from "../../src/workflows/patches.js";
import { AgentStatus } from "../../src/shared/search-attributes.js";
import { fauxModel, gateTool, patchIds, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

const pickColor: ClientToolDeclaration = {
  name: "pick_color",
  description: "Asks the user to pick a color",
  parameters: { type: "object", properties: {} },
  result: { type: "object", properties: { color: { enum: ["red", "blue"] } }, required: ["color"] },
};

async function until<T>(what: string, attempt: () => Promise<T>, ok: (value: T) => boolean): Promise<T> {
  const poll = async () => {
    for (;;) {
      const value = await attempt();
      if (ok(value)) return value;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return within(poll(), 30_000, what);
}

const agentStatus = async (id: string) =>
  (await env.client.workflow.getHandle(id).describe()).typedSearchAttributes.get(AgentStatus);
const stateOf = (handle: AgentRunHandle) => () => handle.state();
/** The run's patch markers: since baseline v4, that one alone, whether the run waits for a client or not. */
const patchesOf = async (id: string) => patchIds((await env.client.workflow.getHandle(id).fetchHistory()).events);

describe("the status of a run waiting for a client", () => {
  it('is "waiting_for_client" (state, AgentStatus, the "waiting" filter) only while nothing else of the batch runs', async () => {
    const gate = gateTool("slow_check");
    const faux = fauxModel([
      fauxAssistantMessage(
        [fauxToolCall("pick_color", {}, { id: "c-1" }), fauxToolCall("slow_check", {}, { id: "g-1" })],
        { stopReason: "toolUse" },
      ),
      (context: Context) => fauxAssistantMessage(`got: ${textOf(context.messages.at(-2))}`),
    ]);
    const { worker, taskQueue } = await testWorker(env, [gate.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("client-status"),
      model: faux.getModel(),
      prompt: "pick",
      clientTools: [pickColor],
    });
    const id = handle.workflowId;
    const result = await worker.runUntil(async () => {
      // The client call waits while the worker tool beside it runs: the run is still working.
      await within(gate.entered.promise, 30_000, "slow_check to start");
      const busy = await until("c-1 waiting", stateOf(handle), (s) => (s.pendingClientResults ?? []).length === 1);
      expect(busy.status).toBe("running");
      expect(await agentStatus(id)).toBe("running");

      // The worker tool ends: only the client call is left, and the run says whom it waits for.
      gate.release.resolve();
      const waiting = await until("waiting_for_client", stateOf(handle), (s) => s.status === "waiting_for_client");
      expect(waiting.pendingClientResults).toMatchObject([{ toolCallId: "c-1" }]);
      expect(await agentStatus(id)).toBe("waiting_for_client");
      const listed = await until(
        'the "waiting" filter to list the run',
        () => listRunPage(env.client, { status: "waiting", text: undefined, pageSize: 1000 }),
        (page) => page.runs.some((r) => r.workflowId === id),
      );
      expect(listed.runs.find((r) => r.workflowId === id)?.status).toBe("waiting_for_client");

      await handle.submitToolResult("c-1", { color: "red" });
      return handle.result();
    });
    expect(textOf(result.messages.at(-1))).toBe('got: {"color":"red"}');
    expect((await handle.state()).status).toBe("completed");
    expect(await agentStatus(id)).toBe("completed");
    expect(await patchesOf(id)).toEqual([BASELINE_PATCH, RUN_SCHEMAS_PATCH]);
  }, 90_000);

  it("a run without client tools never shows it", async () => {
    const gate = gateTool("slow_check");
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("slow_check", {}, { id: "g-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [gate.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("no-client-status"),
      model: faux.getModel(),
      prompt: "check",
    });
    const seen = new Set<AgentRunState["status"]>();
    await worker.runUntil(async () => {
      await within(gate.entered.promise, 30_000, "slow_check to start");
      seen.add((await handle.state()).status);
      gate.release.resolve();
      await handle.result();
    });
    expect([...seen]).toEqual(["running"]);
    expect(await patchesOf(handle.workflowId)).toEqual([BASELINE_PATCH]);
  }, 60_000);
});
