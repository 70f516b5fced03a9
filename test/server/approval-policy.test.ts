/**
 * Approval policies (issue #41, item 1), on the real dev server: rule order and globs (MCP names included),
 * "approve and stop asking" for one tool in one run (across continue-as-new), and a policy an operator changes
 * mid-run, which the next batch follows and history records.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun, InvalidRunInputError } from "../../src/client/client.js";
import type { AgentTool, ApprovalPolicy } from "../../src/shared/contracts.js";
import { agentRunOptions, checkAgents } from "../../src/shared/agents.js";
import { BASELINE_PATCH } from "../../src/workflows/patches.js";
import {
  fauxModel,
  gateTool,
  patchIds,
  rejection,
  stateWhen,
  testWorker,
  textOf,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();

/** A tool that counts its calls by id; `requiresApproval` as given. */
function counted(name: string, requiresApproval?: boolean) {
  const ran: string[] = [];
  const tool: AgentTool = {
    name,
    description: name,
    parameters: Type.Object({}),
    ...(requiresApproval ? { requiresApproval } : {}),
    async execute(id) {
      ran.push(id);
      return { content: [{ type: "text", text: `${name} ran` }] };
    },
  };
  return { tool, ran };
}

const resultText = (messages: any[], id: string) => {
  const m = messages.find((x) => x.role === "toolResult" && x.toolCallId === id);
  return m ? [m.isError, textOf(m)] : undefined;
};

describe("approval policy", () => {
  it("decides by the first matching rule (exact, globs, MCP names), then the default", async () => {
    const read = counted("github__read");
    const create = counted("github__create_issue");
    const danger = counted("danger", true);
    const fsRead = counted("fs_read");
    const other = counted("other");
    const faux = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("github__read", {}, { id: "c-read" }),
          fauxToolCall("github__create_issue", {}, { id: "c-create" }),
          fauxToolCall("danger", {}, { id: "c-danger" }),
          fauxToolCall("fs_read", {}, { id: "c-fs" }),
          fauxToolCall("other", {}, { id: "c-other" }),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [read.tool, create.tool, danger.tool, fsRead.tool, other.tool]);
    const approvalPolicy: ApprovalPolicy = {
      rules: [
        { match: "github__read", action: "allow" },
        { match: "github__*", action: "deny", reason: "no writes to GitHub from this agent" },
        { match: "danger", action: "allow" },
        { match: "fs_?ead", action: "ask" },
      ],
      default: "tool",
    };
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("policy-rules"),
      model: faux.getModel(),
      prompt: "go",
      approvalPolicy,
    });
    const result = await worker.runUntil(async () => {
      const waiting = await stateWhen(handle, (s) => s.pendingApprovals.length > 0, "fs_read to ask");
      // Only the "ask" rule's call waits; "danger" (requiresApproval) was allowed by its rule.
      expect(waiting.pendingApprovals.map((a: any) => a.toolCallId)).toEqual(["c-fs"]);
      expect(waiting.approvalPolicy).toEqual(approvalPolicy);
      await handle.approve("c-fs");
      return within(handle.result(), 20_000, "the run");
    });
    expect(resultText(result.messages, "c-read")).toEqual([false, "github__read ran"]);
    expect(resultText(result.messages, "c-create")).toEqual([
      true,
      "Tool call denied by the approval policy (rule 2, tool github__create_issue): no writes to GitHub from this agent",
    ]);
    expect(resultText(result.messages, "c-danger")).toEqual([false, "danger ran"]);
    expect(resultText(result.messages, "c-fs")).toEqual([false, "fs_read ran"]);
    expect(resultText(result.messages, "c-other")).toEqual([false, "other ran"]);
    expect(create.ran).toEqual([]);
    // The decision path is covered by the run's one patch, asked before its first command (see BASELINE_PATCH).
    const history = await handle.workflow.fetchHistory();
    expect(patchIds(history.events)).toEqual([BASELINE_PATCH]);
  });

  it("a deny default refuses what no rule allows; a bad policy is refused at start, naming the field", async () => {
    const a = counted("a");
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("a", {}, { id: "a-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [a.tool]);
    await expect(
      startAgentRun(env.client, {
        taskQueue,
        model: faux.getModel(),
        prompt: "go",
        approvalPolicy: { rules: [{ match: "a", action: "maybe" as never }] },
      }),
    ).rejects.toThrow(
      new InvalidRunInputError(
        `Invalid run input: "approvalPolicy.rules[0].action" must be one of "allow", "ask", "deny", "tool"`,
      ),
    );
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("policy-default"),
      model: faux.getModel(),
      prompt: "go",
      approvalPolicy: { default: "deny" },
    });
    const result = await worker.runUntil(within(handle.result(), 20_000, "the run"));
    expect(resultText(result.messages, "a-1")).toEqual([
      true,
      "Tool call denied by the approval policy (its default, tool a).",
    ]);
    expect(a.ran).toEqual([]);
  });

  it("'approve and stop asking' auto-approves later calls of that tool in that run only, across continue-as-new", async () => {
    const danger = counted("danger", true);
    const faux = fauxModel([
      // Run 1: two turns calling danger, then done.
      fauxAssistantMessage([fauxToolCall("danger", {}, { id: "d-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxToolCall("danger", {}, { id: "d-2" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("run 1 done"),
      // Run 2: the same tool asks again.
      fauxAssistantMessage([fauxToolCall("danger", {}, { id: "e-1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("run 2 done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger.tool]);
    await worker.runUntil(async () => {
      const first = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("remember"),
        model: faux.getModel(),
        prompt: "go",
        continueAsNew: { afterTurns: 1 },
      });
      await stateWhen(first, (s) => s.pendingApprovals.length === 1, "d-1 to wait");
      // A raw client's bad options are refused by the run's validator; the call keeps waiting.
      expect(await rejection(first.workflow.executeUpdate("approve", { args: ["d-1", { bogus: true }] }))).toContain(
        `Invalid options: "bogus" is not an approve option (remember)`,
      );
      await first.approve("d-1", { remember: true });
      // d-2 runs in the next run of the chain (continue-as-new after each turn) without asking.
      const r1 = await within(first.result(), 20_000, "run 1 (no second approval asked)");
      expect(resultText(r1.messages, "d-2")).toEqual([false, "danger ran"]);
      expect(danger.ran).toEqual(["d-1", "d-2"]);
      const described = await first.workflow.describe();
      expect(described.runId).not.toBe(described.raw.workflowExecutionInfo?.firstRunId);

      const second = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("remember-other"),
        model: faux.getModel(),
        prompt: "go",
      });
      const waiting = await stateWhen(second, (s) => s.pendingApprovals.length === 1, "e-1 to wait");
      expect(waiting.pendingApprovals[0].toolCallId).toBe("e-1");
      expect(waiting.rememberedTools).toBeUndefined();
      await second.approve("e-1");
      await within(second.result(), 20_000, "run 2");
    });
    expect(danger.ran).toEqual(["d-1", "d-2", "e-1"]);
  });

  it("a policy changed mid-run applies to the next batch, is validated, visible in state() and the details, and in history", async () => {
    const gate = gateTool("gate");
    const writer = counted("writer");
    const faux = fauxModel([
      // Batch 1: gate (parallel), then writer (sequential, starts after gate: after the change, still batch 1's policy).
      fauxAssistantMessage([fauxToolCall("gate", {}, { id: "g-1" }), fauxToolCall("writer", {}, { id: "w-1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage([fauxToolCall("writer", {}, { id: "w-2" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    writer.tool.executionMode = "sequential";
    const { worker, taskQueue } = await testWorker(env, [gate.tool, writer.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("policy-change"),
      model: faux.getModel(),
      prompt: "go",
    });
    const policy: ApprovalPolicy = { rules: [{ match: "writ*", action: "deny", reason: "the repository is frozen" }] };
    const result = await worker.runUntil(async () => {
      await within(gate.entered.promise, 20_000, "gate");
      expect(await rejection(handle.setApprovalPolicy({ rules: [{ match: "", action: "deny" }] }))).toContain(
        `"policy.rules[0].match" must be a tool name or glob of 1-200 characters`,
      );
      // A raw client bypassing the handle's check is refused by the run's validator.
      expect(
        await rejection(handle.workflow.executeUpdate("setApprovalPolicy", { args: [{ default: "never" }] })),
      ).toContain(`Invalid approval policy: "policy.default" must be one of`);
      expect(await handle.setApprovalPolicy(policy)).toEqual(policy);
      const state = await handle.state();
      expect(state.approvalPolicy).toEqual(policy);
      const metadata = (await handle.workflow.query("__temporal_workflow_metadata")) as { currentDetails?: string };
      expect(metadata.currentDetails).toContain("approval policy: 1 rule (writ* → deny), default tool");
      gate.release.resolve();
      return within(handle.result(), 20_000, "the run");
    });
    expect(resultText(result.messages, "w-1")).toEqual([false, "writer ran"]);
    expect(resultText(result.messages, "w-2")).toEqual([
      true,
      "Tool call denied by the approval policy (rule 1, tool writer): the repository is frozen",
    ]);
    expect(writer.ran).toEqual(["w-1"]);
    const history = await handle.workflow.fetchHistory();
    const accepted = history.events?.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes) ?? [];
    expect(accepted.map((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name)).toEqual(
      ["setApprovalPolicy"],
    );
  });

  it("agents declared in the config carry a default policy, checked when the config loads", () => {
    const approvalPolicy: ApprovalPolicy = { rules: [{ match: "github__*", action: "ask" }], default: "allow" };
    const agents = checkAgents([{ name: "triage", model: "faux/m", approvalPolicy }]);
    expect(agentRunOptions(agents, { agent: "triage", prompt: "hi" }).approvalPolicy).toEqual(approvalPolicy);
    expect(() => checkAgents([{ name: "x", model: "faux/m", approvalPolicy: { rules: "all" } }])).toThrow(
      `"agents[0].approvalPolicy.rules" must be an array of rules`,
    );
  });
});
