/**
 * A finished run's state(), rebuilt from its history alone (history-view.ts closedRunState), equals the live
 * state's last answer in every field (issue 55): over random runs with an approval policy or none, a policy floor
 * or none, approvals given with and without `remember`, denials, policy changes while a call waits, a budget, and
 * continue-as-new (the approvals then travel in the carry). The live state's last answer is the state query asked
 * of the closed run while its worker is still up: the worker replays the run to its end and answers from there.
 */
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import type { AgentRunState, AgentTool, ApprovalPolicy } from "../../src/shared/contracts.js";
import { stateQuery } from "../../src/shared/definitions.js";
import { fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

const POLICIES: ApprovalPolicy[] = [
  { default: "tool" },
  { rules: [{ match: "guarded", action: "ask", reason: "look first" }] },
  { rules: [{ match: "free", action: "allow" }], default: "ask" },
  { default: "allow" },
];
const FLOORS: ApprovalPolicy[][] = [[{ default: "tool" }], [{ rules: [{ match: "elsewhere", action: "deny" }] }]];

type Decision = "approve" | "remember" | "deny" | "policy-then-approve";

describe("a finished run's state from history equals the live state's last answer", () => {
  it("over random runs with policies, floors, remembered tools, denials, budgets and continue-as-new", async () => {
    // Turn n < the run's turns calls `guarded` and `free` once each (ids name the run and the turn); then it answers.
    const reply = (context: Context) => {
      const key = textOf(context.messages[0]).split(" ")[0];
      const want = Number(textOf(context.messages[0]).split(" ")[1]);
      const turn = context.messages.filter((m) => m.role === "assistant").length + 1;
      if (turn > want) return fauxAssistantMessage(`done after ${turn - 1} tool turns`);
      return fauxAssistantMessage(
        ["guarded", "free"].map((name) => fauxToolCall(name, {}, { id: `${key}.t${turn}.${name}` })),
        { stopReason: "toolUse" },
      );
    };
    const faux = fauxModel(Array.from({ length: 400 }, () => reply));
    const tool = (name: string, requiresApproval: boolean): AgentTool => ({
      name,
      description: name,
      parameters: Type.Object({}),
      ...(requiresApproval ? { requiresApproval: true } : {}),
      execute: async () => ({ content: [{ type: "text", text: `${name} ran` }] }),
    });
    const { worker, taskQueue } = await testWorker(env, [tool("guarded", true), tool("free", false)]);
    const seen = { remembered: 0, policies: 0, floors: 0, continued: 0 };
    await worker.runUntil(
      fc.assert(
        fc.asyncProperty(
          fc.record({
            turns: fc.integer({ min: 1, max: 3 }),
            policy: fc.option(fc.integer({ min: 0, max: POLICIES.length - 1 }), { nil: undefined }),
            floor: fc.option(fc.integer({ min: 0, max: FLOORS.length - 1 }), { nil: undefined }),
            decisions: fc.array(fc.constantFrom<Decision>("approve", "remember", "deny", "policy-then-approve"), {
              minLength: 3,
              maxLength: 3,
            }),
            changeTo: fc.integer({ min: 0, max: POLICIES.length - 1 }),
            afterTurns: fc.option(fc.integer({ min: 1, max: 2 }), { nil: undefined }),
            budget: fc.boolean(),
          }),
          async (spec) => {
            const key = uniqueId("fs");
            const handle = await startAgentRun(env.client, {
              taskQueue,
              workflowId: key,
              model: faux.getModel(),
              prompt: `${key} ${spec.turns}`,
              tools: ["guarded", "free"],
              maxTurns: 8,
              ...(spec.policy !== undefined ? { approvalPolicy: POLICIES[spec.policy] } : {}),
              ...(spec.floor !== undefined ? { approvalPolicyFloor: FLOORS[spec.floor] } : {}),
              ...(spec.afterTurns !== undefined ? { continueAsNew: { afterTurns: spec.afterTurns } } : {}),
              ...(spec.budget ? { budget: { maxToolCalls: 50, maxTokens: 1_000_000 } } : {}),
            });
            // Answer every call that waits for a person, in turn, till the run ends.
            const ended = within(handle.result(), 30_000, "the run to end").then(() => true);
            let asked = 0;
            for (let done = false; !done; ) {
              const now = await handle.state().catch(() => undefined);
              const waiting = now?.pendingApprovals[0]?.toolCallId;
              if (waiting) {
                const decision = spec.decisions[asked++ % spec.decisions.length];
                if (decision === "policy-then-approve") await handle.setApprovalPolicy(POLICIES[spec.changeTo]);
                await (
                  decision === "deny"
                    ? handle.deny(waiting, "no")
                    : handle.approve(waiting, decision === "remember" ? { remember: true } : undefined)
                ).catch(() => undefined); // a policy change may have decided it already
              }
              done = await Promise.race([ended, new Promise<boolean>((r) => setTimeout(() => r(false), 40))]);
            }
            // The live state's last answer, then the same run's state with the answer built from history.
            const live = await handle.workflow.query(stateQuery);
            const fromHistory = await within(getAgentRun(env.client, key).state(), 30_000, "state() from history");
            expect(fromHistory).toEqual(JSON.parse(JSON.stringify(live)) as AgentRunState);
            if (live.rememberedTools) seen.remembered++;
            if (live.approvalPolicy) seen.policies++;
            if (live.approvalPolicyFloor) seen.floors++;
            if (live.previousRunId) seen.continued++;
          },
        ),
        { numRuns: 10, seed: 55, endOnFailure: true },
      ),
    );
    // The runs covered what the rebuilt state used to lack.
    expect(seen.remembered).toBeGreaterThan(0);
    expect(seen.policies).toBeGreaterThan(0);
    expect(seen.floors).toBeGreaterThan(0);
    expect(seen.continued).toBeGreaterThan(0);
  }, 120_000);
});
