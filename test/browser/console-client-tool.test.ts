/**
 * The console's run page at a call waiting for a client (issue #41), in Chromium: the status says so, a
 * "Submit result" box sits at the call's tool row (its HTML arguments rendered as text), a result the tool's
 * schema refuses is refused in words and the box stays, and a good one reaches the model.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { consoleWorker, withConsoleEnv } from "../support/console-env.js";
import { fauxModel, textOf, uniqueId, within } from "../support/helpers.js";

const ctx = withConsoleEnv();

const XSS = `<img src=x onerror="document.body.dataset.pwned='1'">`;

describe("console: a call waiting for a client", () => {
  it("offers a Submit result box; a refused result is said in words, a good one reaches the model", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("pick_color", { hint: XSS }, { id: "call-color" })], {
        stopReason: "toolUse",
      }),
      (context: Context) => fauxAssistantMessage(`picked: ${textOf(context.messages.at(-1))}`),
    ]);
    const { worker, taskQueue } = await consoleWorker(ctx);
    await worker.runUntil(async () => {
      const workflowId = uniqueId("console-client");
      const handle = await startAgentRun(ctx.env.client, {
        taskQueue,
        workflowId,
        model: faux.getModel(),
        prompt: "pick a color",
        clientTools: [
          {
            name: "pick_color",
            description: "Asks the user to pick a color",
            parameters: { type: "object", properties: { hint: { type: "string" } } },
            result: { type: "object", properties: { color: { enum: ["red", "blue"] } }, required: ["color"] },
          },
        ],
      });
      const page = await ctx.browser.newPage({ viewport: { width: 1100, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("dialog", (d) => void d.dismiss().then(() => errors.push(`dialog: ${d.message()}`)));
      await page.goto(
        `${ctx.service.server.url}/runs/${encodeURIComponent(workflowId)}/console#token=${ctx.service.server.token}`,
      );

      const row = page.locator('details.tool[data-tool-call-id="call-color"]');
      const box = row.locator(".client-result");
      await box.locator("button.submit-result").waitFor({ timeout: 60_000 });
      await page.waitForFunction(
        () => (globalThis as any).document.getElementById("status").textContent === "waiting for a client",
        undefined,
        { timeout: 30_000 },
      );
      await expect(page.locator("#why").textContent()).resolves.toContain("waits for a client's result");
      await expect(row.locator("pre.args").textContent()).resolves.toContain(JSON.stringify(XSS));

      // The schema refuses green: said in words, the box stays for another try, with what was typed in it (the
      // page reads the state again after a refusal; that read once rebuilt the box empty, and a result typed
      // meanwhile was sent as "").
      const reads = () => page.evaluate(() => Number((globalThis as any).document.body.dataset.stateReads ?? 0));
      await box.locator("textarea.result-input").fill('{"color":"green"}');
      const before = await reads();
      await box.locator("button.submit-result").click();
      await page.waitForFunction(
        () =>
          /Result refused: .*must be one of/.test((globalThis as any).document.getElementById("notice").textContent),
        undefined,
        { timeout: 30_000 },
      );
      await page.waitForFunction((n) => Number((globalThis as any).document.body.dataset.stateReads ?? 0) > n, before, {
        timeout: 30_000,
      });
      expect(await box.count()).toBe(1);
      expect(await box.locator("textarea.result-input").inputValue()).toBe('{"color":"green"}');
      expect((await handle.state()).pendingClientResults).toMatchObject([{ toolCallId: "call-color" }]);

      await box.locator("textarea.result-input").fill('{"color":"red"}');
      await box.locator("button.submit-result").click();
      // What the page and the tap hold, for a failure to say whether the run took the result and the console missed
      // it, or the result never reached the run (the page says why in its notice).
      const seen = async () =>
        JSON.stringify({
          notice: await page.locator("#notice").textContent(),
          row: await row.evaluate((d: any) => d.innerText as string),
          tap: ctx.service.tap.since(workflowId, -1).map(({ seq, event }) => `${seq}:${event.type}`),
        });
      // The run's end bounds the wait (under load the update and the model call behind it take what they take): then
      // the page's stream has every event up to agent_end, and the row must show the result.
      const done = await within(handle.result(), 100_000, "the run to take the result and end").catch(async (err) => {
        throw new Error(`${(err as Error).message}: ${await seen()}`);
      });
      expect(textOf(done.messages.at(-1))).toBe('picked: {"color":"red"}');
      const shown = await row
        .locator(".result")
        .textContent({ timeout: 30_000 })
        .catch(async (err) => {
          throw new Error(
            `the console did not show the result of an ended run: ${(err as Error).message}; ${await seen()}`,
          );
        });
      expect(shown).toBe('{"color":"red"}');
      await page.waitForFunction(() => !(globalThis as any).document.querySelector(".client-result"), undefined, {
        timeout: 30_000,
      });
      expect(await page.locator("#log img").count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as any).document.body.dataset.pwned)).toBeUndefined();
      expect(errors).toEqual([]);
    });
  }, 240_000);
});
