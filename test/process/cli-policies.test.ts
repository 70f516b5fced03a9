/**
 * Approval policies and client tools from a shell (issue #41): `jai-agent approve <id> <callId> --remember`,
 * `jai-agent policy <id> '<json>'` and `jai-agent tool-result <id> <callId> '<json>' [--error]` run as child
 * processes against runs served by an in-process worker on the dev server. A malformed policy or result JSON
 * is a usage error (exit 2, nothing sent); a result the tool's schema refuses is the run's one-line reason,
 * exit 1, and the call keeps waiting.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentRunState, AgentTool, ClientToolDeclaration } from "../../src/shared/contracts.js";
import { fauxModel, stateWhen, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";
import { jaiAgent } from "../support/cli.js";

const env = withServer();

function approvalTool(name: string, ran: string[]): AgentTool {
  return {
    name,
    description: `${name} a path`,
    parameters: Type.Object({ path: Type.String() }),
    requiresApproval: true,
    async execute(_id, args: any) {
      ran.push(`${name} ${args.path}`);
      return { content: [{ type: "text", text: `${name} done: ${args.path}` }] };
    },
  };
}

const toolResults = (context: Context) =>
  context.messages
    .filter((m) => m.role === "toolResult")
    .map((m) => textOf(m))
    .join(" | ");

describe("jai-agent: approval policies and client tools", () => {
  it("policy <id> sets the policy (a malformed one: exit 2, nothing sent); approve --remember stops asking for the tool", async () => {
    const ran: string[] = [];
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/x" }, { id: "del-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage(
        [
          fauxToolCall("delete_all", { path: "/y" }, { id: "del-2" }),
          fauxToolCall("drop_table", { path: "users" }, { id: "drop-1" }),
        ],
        { stopReason: "toolUse" },
      ),
      (context) => fauxAssistantMessage(`saw: ${toolResults(context)}`),
    ]);
    const { worker, taskQueue } = await testWorker(env, [
      approvalTool("delete_all", ran),
      approvalTool("drop_table", ran),
    ]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-policy"),
      model: faux.getModel(),
      prompt: "clean up",
    });
    const id = handle.workflowId;
    const result = await worker.runUntil(async () => {
      await stateWhen(handle, (s) => s.pendingApprovals.length === 1, "del-1 waiting for approval");

      const [badPolicy, badJson] = await Promise.all([
        jaiAgent(["policy", id, '{"default":"maybe"}']),
        jaiAgent(["policy", id, "{nope"]),
      ]);
      expect(badPolicy.code).toBe(2);
      expect(badPolicy.stderr).toContain(`invalid approval policy: "policy.default" must be one of`);
      expect(badJson.code).toBe(2);
      expect(badJson.stderr).toContain("the policy must be JSON");
      expect((await handle.state()).approvalPolicy).toBeUndefined();

      const policy = { rules: [{ match: "drop_*", action: "deny", reason: "never drop" }] };
      const set = await jaiAgent(["policy", id, JSON.stringify(policy)]);
      expect(set.stderr).toBe("");
      expect(set.code).toBe(0);
      expect(JSON.parse(set.stdout)).toMatchObject(policy);
      expect((await handle.state()).approvalPolicy).toMatchObject(policy);

      const approved = await jaiAgent(["approve", id, "del-1", "--remember"]);
      expect(approved.stderr).toBe("");
      expect(approved.stdout.trim()).toBe("approved del-1 (and its tool for the rest of the run)");
      expect(approved.code).toBe(0);
      return handle.result();
    });
    // del-2 ran without asking (remembered: without --remember the run would wait for approval again); drop-1 never ran (the policy set from the shell denies it).
    expect(ran).toEqual(["delete_all /x", "delete_all /y"]);
    expect(textOf(result.messages.at(-1))).toContain(
      "Tool call denied by the approval policy (rule 1, tool drop_table): never drop",
    );
  }, 120_000);

  it("tool-result <id> <callId>: a result the schema refuses is exit 1 with the run's reason; --error reports a failure", async () => {
    const pickColor: ClientToolDeclaration = {
      name: "pick_color",
      description: "Asks the user to pick a color",
      parameters: { type: "object", properties: {} },
      result: { type: "object", properties: { color: { enum: ["red", "blue"] } }, required: ["color"] },
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("pick_color", {}, { id: "p-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxToolCall("pick_color", {}, { id: "p-2" })], { stopReason: "toolUse" }),
      (context) => fauxAssistantMessage(`saw: ${toolResults(context)}`),
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-tool-result"),
      model: faux.getModel(),
      prompt: "pick colors",
      clientTools: [pickColor],
    });
    const id = handle.workflowId;
    const waitsFor = (callId: string) => (s: AgentRunState) =>
      (s.pendingClientResults ?? []).some((p) => p.toolCallId === callId);
    const result = await worker.runUntil(async () => {
      await stateWhen(handle, waitsFor("p-1"), "p-1 waiting for the client");
      const [refused, badJson, unknownCall] = await Promise.all([
        jaiAgent(["tool-result", id, "p-1", '{"color":"green"}']),
        jaiAgent(["tool-result", id, "p-1", "{nope"]),
        jaiAgent(["tool-result", id, "no-such-call", '{"color":"red"}']),
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim()).toMatch(/^submitToolResult rejected: .*color/);
      expect(refused.stderr.trim().split("\n")).toHaveLength(1);
      expect(badJson.code).toBe(2);
      expect(badJson.stderr).toContain("the result must be JSON");
      expect(unknownCall.code).toBe(1);
      expect(unknownCall.stderr).toMatch(/^submitToolResult rejected: .*no-such-call/);
      // Still waiting after the refusals.
      expect((await handle.state()).pendingClientResults).toMatchObject([{ toolCallId: "p-1" }]);

      const ok = await jaiAgent(["tool-result", id, "p-1", '{"color":"red"}']);
      expect(ok.stderr).toBe("");
      expect(ok.stdout.trim()).toBe("result submitted for p-1");
      expect(ok.code).toBe(0);

      await stateWhen(handle, waitsFor("p-2"), "p-2 waiting for the client");
      const failed = await jaiAgent(["tool-result", id, "p-2", '"no screen attached"', "--error"]);
      expect(failed.code).toBe(0);
      return handle.result();
    });
    const saw = textOf(result.messages.at(-1));
    expect(saw).toContain('{"color":"red"}');
    expect(saw).toContain("no screen attached");
    expect(result.messages.filter((m) => m.role === "toolResult").map((m: any) => m.isError)).toEqual([false, true]);
  }, 120_000);
});
