/**
 * The console's run page shows how a run ended (issue 57 row 7), in Chromium: a typed run's validated result as
 * JSON in its own panel (not only as the final_answer tool row), and a run that failed its typed answer with the
 * reason, not only "failed". The result's text is rendered as text.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { consoleWorker, withConsoleEnv } from "../support/console-env.js";
import { fauxModel, uniqueId, within } from "../support/helpers.js";

const ctx = withConsoleEnv();

const XSS = `<img src=x onerror="document.body.dataset.pwned='1'">`;
const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

describe("console: how a run ended", () => {
  it("a typed result in its own panel; a failed typed run says why", async () => {
    const right = fauxModel([
      fauxAssistantMessage([fauxToolCall("final_answer", { city: XSS })], { stopReason: "toolUse" }),
    ]);
    const wrong = fauxModel([
      fauxAssistantMessage([fauxToolCall("final_answer", { town: "Lisbon" })], { stopReason: "toolUse" }),
    ]);
    const { worker, taskQueue } = await consoleWorker(ctx);
    await worker.runUntil(async () => {
      const typed = await startAgentRun(ctx.env.client, {
        taskQueue,
        workflowId: uniqueId("console-typed"),
        model: right.getModel(),
        prompt: "where?",
        output: schema as never,
      });
      const failed = await startAgentRun(ctx.env.client, {
        taskQueue,
        workflowId: uniqueId("console-typed-failed"),
        model: wrong.getModel(),
        prompt: "where?",
        output: schema as never,
        outputRetries: 0,
      });
      await within(Promise.all([typed.result(), failed.result().catch(() => undefined)]), 60_000, "the runs to end");
      const page = await ctx.browser.newPage({ viewport: { width: 1100, height: 900 } });
      const open = async (id: string) => {
        await page.goto(
          `${ctx.service.server.url}/runs/${encodeURIComponent(id)}/console#token=${ctx.service.server.token}`,
        );
        await page.waitForSelector("#outcome:not([hidden])", { timeout: 30_000 });
        return page.locator("#outcome").innerText();
      };
      const shown = await open(typed.workflowId);
      expect(shown).toContain("Typed result");
      expect(JSON.parse(await page.locator("#outcome pre.result").innerText())).toEqual({ city: XSS });
      expect(await page.evaluate(() => document.body.dataset.pwned)).toBeUndefined();
      const why = await open(failed.workflowId);
      expect(why).toContain("Why it ended");
      expect(why).toMatch(/Typed output: no valid final answer after 1 attempt/);
      await page.close();
    });
  });
});
