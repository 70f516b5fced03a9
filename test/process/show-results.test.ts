/**
 * `jai-agent show` prints every tool result of the transcript, the ones the loop made itself too (issue 38, row 10):
 * a call a person denied and a call skipped by steering have no activity of their own in history, only their place
 * in the next model call's context and the run's result. A real run on the dev server, `show` as a child process.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, gateTool, testWorker, uniqueId, within, withServer } from "../support/helpers.js";
import { jaiAgent } from "../support/cli.js";

const env = withServer();

describe("show", () => {
  it("prints a denied call's result and a steering-skipped call's result, each after the reply that made the call", async () => {
    const risky: AgentTool = {
      name: "risky",
      description: "needs a person",
      parameters: Type.Object({}),
      requiresApproval: true,
      async execute() {
        return { content: [{ type: "text", text: "risky ran" }] };
      },
    };
    const slow = gateTool("slow");
    const later = gateTool("later", "sequential");
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("risky", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxToolCall("slow", {}), fauxToolCall("later", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage("All done."),
    ]);
    const { worker, taskQueue } = await testWorker(env, [risky, slow.tool, later.tool]);
    const workflowId = uniqueId("show-results");
    const handle = await startAgentRun(env.client, { taskQueue, workflowId, model: faux.getModel(), prompt: "Go." });
    await worker.runUntil(async () => {
      const pending = await within(
        (async () => {
          for (;;) {
            const state = await handle.state();
            if (state.pendingApprovals.length) return state.pendingApprovals[0];
            await new Promise((r) => setTimeout(r, 100)); // polling the run's state, not synchronising on time
          }
        })(),
        60_000,
        "the approval",
      );
      await handle.deny(pending.toolCallId, "too risky");
      await within(slow.entered.promise, 60_000, "slow started");
      await handle.steer("stop, do something else");
      slow.release.resolve();
      return handle.result();
    });
    expect(later.executed()).toBe(false);

    const out = await jaiAgent(["show", workflowId]);
    expect(out.code).toBe(0);
    const lines = out.stdout.split("\n");
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    // Made by the loop: no activity wrote them, yet each is printed, marked as such.
    const denied = at(/^\[loop\] ✗ risky \(.+\): .*denied.*too risky/);
    const skipped = at(/^\[loop\] ✗ later \(.+\): Skipped/);
    expect({ denied, skipped }).toEqual({ denied: expect.any(Number), skipped: expect.any(Number) });
    expect(denied).toBeGreaterThan(0);
    expect(skipped).toBeGreaterThan(0);
    // The activity's result is printed as before; each loop result sits between the reply that asked and the next one.
    const ran = at(/^\[\d+\] ✓ slow \(.+\): slow done/);
    const replies = lines.flatMap((l, i) => (/^\[\d+\] assistant /.test(l) ? [i] : []));
    expect(replies).toHaveLength(3);
    expect(denied).toBeGreaterThan(replies[0]);
    expect(denied).toBeLessThan(replies[1]);
    expect(ran).toBeGreaterThan(replies[1]);
    expect(skipped).toBeGreaterThan(replies[1]);
    expect(skipped).toBeLessThan(replies[2]);
    // Printed once each.
    expect(lines.filter((l) => /✗ (risky|later) /.test(l))).toHaveLength(2);
  }, 180_000);
});
