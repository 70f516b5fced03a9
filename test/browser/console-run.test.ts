/**
 * The console's run page in Chromium (no injected headers: the token comes in the URL fragment, as the worker
 * prints it): tokens stream in, a person approves one call and denies another with a reason at their tool rows,
 * a tool result with HTML renders as text, the model's markdown renders (http(s) links only), each step shows
 * its time and tokens, a session prompt is answered, the run is cancelled, and then every action is disabled
 * and says why, also on a fresh load. One browser, one session run.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../scripts/chromium.js";
import { fauxAssistantMessage, fauxText, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { startRunEventsService, type RunEventsService } from "../../src/worker/events/serve.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxModel, openTestEnv, uniqueId, type TestEnv } from "../support/helpers.js";
import { screenshotPath } from "../support/screenshots.js";

let env: TestEnv;
let service: RunEventsService;
let browser: Browser;
beforeAll(async () => {
  env = await openTestEnv();
  service = await startRunEventsService({ client: env.client, port: 0, temporalUiUrl: "http://127.0.0.1:8233" });
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await service?.server.close();
  await env?.close();
});

const lookup: AgentTool = {
  name: "lookup",
  description: "Looks a word up",
  parameters: Type.Object({ word: Type.String() }),
  requiresApproval: true,
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `${args.word}: found` }], details: {} };
  },
};
const XSS = `<img src=x onerror="document.body.dataset.pwned='1'">`;
const fetchPage: AgentTool = {
  name: "fetch_page",
  description: "Returns a page",
  parameters: Type.Object({}),
  async execute() {
    return { content: [{ type: "text", text: `page body: ${XSS}` }], details: {} };
  },
};

describe("console: the run page", () => {
  it("streams, approves and denies inline, renders text safely, answers a session prompt, cancels, then disables", async () => {
    const faux = fauxModel(
      [
        fauxAssistantMessage(
          [
            fauxText("Let me **check** two words with `lookup`."),
            fauxToolCall("lookup", { word: "alpha" }, { id: "call-alpha" }),
            fauxToolCall("lookup", { word: "beta" }, { id: "call-beta" }),
          ],
          { stopReason: "toolUse" },
        ),
        fauxAssistantMessage([fauxText("Now the page."), fauxToolCall("fetch_page", {}, { id: "call-page" })], {
          stopReason: "toolUse",
        }),
        fauxAssistantMessage("First answer:\n\n- alpha is found\n- beta was denied"),
        fauxAssistantMessage("Second answer, see [the docs](https://example.com/docs) or [this](javascript:alert(1))."),
      ],
      { tokensPerSecond: 40 },
    );
    const taskQueue = uniqueId("tq");
    const worker = await createAgentWorker({
      connection: env.connection,
      taskQueue,
      tools: [lookup, fetchPage],
      workflowBundle: env.bundle,
      onEvent: service.onEvent,
      workerOptions: { identity: service.identity },
    });
    await worker.runUntil(async () => {
      const workflowId = uniqueId("console-run");
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId,
        model: faux.getModel(),
        prompt: "Look up alpha and beta, then fetch the page.",
        session: true,
      });
      const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("dialog", (d) => void d.dismiss().then(() => errors.push(`dialog: ${d.message()}`)));
      const path = `/runs/${encodeURIComponent(workflowId)}/console`;
      await page.goto(`${service.server.url}${path}#token=${service.server.token}`);
      // Tokens arrive while the first message streams.
      await page.waitForFunction(() => Number((globalThis as any).document.body.dataset.deltas ?? 0) >= 3, undefined, {
        timeout: 60_000,
      });
      expect(page.url()).toBe(`${service.server.url}${path}`); // the token left the address bar

      // Both calls wait, each at its own tool row; "approve all" is offered for the two.
      const alpha = page.locator('details.tool[data-tool-call-id="call-alpha"]');
      const beta = page.locator('details.tool[data-tool-call-id="call-beta"]');
      await alpha.locator(".approval button.approve").waitFor({ timeout: 60_000 });
      await beta.locator(".approval button.deny").waitFor({ timeout: 60_000 });
      await page.locator("#approve-all").waitFor();
      await expect(page.locator("#why").textContent()).resolves.toContain("waits for your decision");
      // Into a temp folder (JAI_SCREENSHOTS=docs retakes the docs' image): npm test leaves tracked files alone.
      const shot = screenshotPath("console-run.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(existsSync(shot)).toBe(true);
      await alpha.locator("button.approve").click();
      await beta.locator("input.reason").fill("not this one");
      await beta.locator("button.deny").click();
      await expect(beta.locator(".result").textContent({ timeout: 60_000 })).resolves.toContain("not this one");
      await expect(alpha.locator(".result").textContent({ timeout: 60_000 })).resolves.toBe("alpha: found");

      // The tool's HTML is text; nothing ran.
      const fetched = page.locator('details.tool[data-tool-call-id="call-page"] .result');
      await expect(fetched.textContent({ timeout: 60_000 })).resolves.toBe(`page body: ${XSS}`);
      expect(await page.locator("#log img").count()).toBe(0);

      // The session waits for a prompt: markdown rendered, each step timed and counted, the chat box open.
      await page.waitForFunction(() => !(globalThis as any).document.getElementById("prompt").disabled, undefined, {
        timeout: 60_000,
      });
      await expect(page.locator(".assistant strong").first().textContent()).resolves.toBe("check");
      await expect(page.locator(".assistant li").allTextContents()).resolves.toEqual([
        "alpha is found",
        "beta was denied",
      ]);
      const meta = await page.locator(".step-meta").first().textContent();
      expect(meta).toMatch(/^step 1 · \d+(\.\d+)? (ms|s) · [\d,]+ tokens \([\d,]+ in, [\d,]+ out\)/);
      await page.locator("#message").fill("And now?");
      await page.locator("#prompt").click();
      const second = page.locator(".assistant", { hasText: "Second answer" });
      await second.waitFor({ timeout: 60_000 });
      await page.waitForFunction(() => !(globalThis as any).document.getElementById("prompt").disabled, undefined, {
        timeout: 60_000,
      });
      await expect(second.locator("a").getAttribute("href")).resolves.toBe("https://example.com/docs");
      expect(await second.locator("a").count()).toBe(1); // the javascript: link stayed text
      await expect(page.locator(".msg.user").last().textContent()).resolves.toBe("And now?");

      // Cancel; then nothing more can be sent, and the page says why, on a fresh load too.
      await page.locator("#cancel").click();
      await page.waitForSelector("body[data-ended]", { timeout: 60_000 });
      const disabled = async () => {
        for (const id of ["prompt", "steer", "follow-up", "cancel"])
          expect(await page.locator(`#${id}`).isDisabled()).toBe(true);
        await expect(page.locator("#why").textContent()).resolves.toContain("This run has ended (cancelled");
      };
      await disabled();
      await page.reload();
      await page.waitForSelector("body[data-ended]", { timeout: 60_000 });
      await disabled();
      await expect(page.locator("#ui").getAttribute("href")).resolves.toBe(
        `http://127.0.0.1:8233/namespaces/default/workflows/${workflowId}`,
      );
      expect((await handle.result()).stopReason).toBe("aborted");
      expect(await page.evaluate(() => (globalThis as any).document.body.dataset.pwned)).toBeUndefined();
      expect(errors).toEqual([]);
    });
  }, 180_000);
});
