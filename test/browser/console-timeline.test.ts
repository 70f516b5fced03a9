/**
 * A run's timeline in the console (issue 57), in Chromium: per turn, from the run's history, where the time went.
 * The run has a model call Temporal retried (a connection reset), two tool calls that ran in parallel and one that
 * waited for a person's approval: the page draws a retry bar, two tool bars that overlap, an approval wait and the
 * model streaming, on a live run and once it ended; the API's JSON says the same.
 */
import { describe, expect, it } from "@jest/globals";
import type { Page } from "playwright-core";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { RunTimeline } from "../../src/client/timeline.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { consoleWorker, withConsoleEnv } from "../support/console-env.js";
import { deferred, fauxModel, stateWhen, uniqueId, within } from "../support/helpers.js";

const ctx = withConsoleEnv();

const both = deferred();
let running = 0;
/** Each waits until both have started: they ran at the same time, whatever the machine's speed. */
const lookup = (name: string, requiresApproval = false): AgentTool => ({
  name,
  description: name,
  parameters: Type.Object({}),
  requiresApproval,
  execute: async () => {
    if (++running === 2) both.resolve();
    await both.promise;
    return { content: [{ type: "text", text: `${name} done` }] };
  },
});

async function bars(page: Page) {
  await page.locator("#timeline > summary").click();
  await page.waitForSelector("#timeline .tl-bar", { timeout: 30_000 });
  return page.$$eval("#timeline .tl-bar", (els) =>
    els.map((e) => ({
      kind: (e as HTMLElement).dataset.kind!,
      label: (e as HTMLElement).dataset.label!,
      start: Number((e as HTMLElement).dataset.start),
      end: Number((e as HTMLElement).dataset.end),
    })),
  );
}

describe("console: a run's timeline", () => {
  it("shows a retry, parallel tools, an approval wait and the model, live and ended", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([], { stopReason: "error", errorMessage: "read ECONNRESET" }),
      fauxAssistantMessage([fauxToolCall("alpha", {}, { id: "a1" }), fauxToolCall("beta", {}, { id: "b1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await consoleWorker(ctx, [lookup("alpha"), lookup("beta", true)]);
    await worker.runUntil(async () => {
      const handle = await startAgentRun(ctx.env.client, {
        taskQueue,
        workflowId: uniqueId("console-timeline"),
        model: faux.getModel(),
        prompt: "go",
        modelActivity: { retry: { initialInterval: "50ms" } },
      });
      const page = await ctx.browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(
        `${ctx.service.server.url}/runs/${encodeURIComponent(handle.workflowId)}/console#token=${ctx.service.server.token}`,
      );
      // Live: the approval is still being waited for; the model's retry is already drawn.
      await stateWhen(handle, (s) => s.pendingApprovals.length === 1, "the approval");
      const live = await bars(page);
      expect(live.some((b) => b.kind === "retry" && /2 attempts/.test(b.label))).toBe(true);
      await handle.approve("b1");
      await within(handle.result(), 60_000, "the result");

      const api = (await (
        await fetch(`${ctx.service.server.url}/runs/${encodeURIComponent(handle.workflowId)}/timeline`, {
          headers: { authorization: `Bearer ${ctx.service.server.token}` },
        })
      ).json()) as RunTimeline;
      expect(api.turns.map((t) => t.turn)).toEqual([1, 2]);
      expect(api.end).toBeDefined();

      await page.reload();
      const ended = await bars(page);
      const kinds = ended.map((b) => b.kind);
      expect(kinds).toEqual(expect.arrayContaining(["retry", "model", "tool", "approval"]));
      const tools = ended.filter((b) => b.kind === "tool");
      expect(tools.map((b) => b.label).sort()).toEqual(["a1", "b1"]);
      // Parallel: each tool's bar overlaps the other's.
      expect(tools[0].start < tools[1].end && tools[1].start < tools[0].end).toBe(true);
      // The approval wait ends before beta (the approved call) starts.
      const approval = ended.find((b) => b.kind === "approval")!;
      expect(approval.end).toBeLessThanOrEqual(tools.find((b) => b.label === "b1")!.start);
      expect(await page.locator("#timeline .tl-row").count()).toBe(2);
      await page.close();
    });
  });
});
