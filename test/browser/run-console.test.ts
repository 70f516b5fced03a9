/** The run console in a real browser (Debian chromium via playwright-core), and `npm run watch` on a running and a finished run. */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { describe, expect, it } from "@jest/globals";
import { launchChromium } from "../../scripts/chromium.js";
import { fauxAssistantMessage, fauxText, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { startRunEventsService } from "../../src/worker/events/serve.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxModel, uniqueId, within, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";
import { screenshotPath } from "../support/screenshots.js";

const env = withServer();

const lookup: AgentTool = {
  name: "lookup",
  description: "Looks a word up",
  parameters: Type.Object({ word: Type.String() }),
  requiresApproval: true,
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `${args.word}: a greeting` }], details: {} };
  },
};

/** `npm run watch -- <id>` in its own process: what it printed once it exits, and a wait for a line to appear. */
function watch(workflowId: string, token: string): Promise<string> & { printed(text: string): Promise<void> } {
  let out = "";
  const waiting: { text: string; resolve: () => void }[] = [];
  const done = new Promise<string>((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeEntry("src/cli/watch.ts"), workflowId], {
      // The token the run server minted; watch sends it to the server found in history only on a trusted host.
      env: { ...process.env, JAI_HTTP_TOKEN: token, JAI_EVENTS_TRUSTED_HOSTS: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const take = (c: Buffer) => {
      out += c.toString();
      for (const w of waiting) if (out.includes(w.text)) w.resolve();
    };
    proc.stdout.on("data", take);
    proc.stderr.on("data", take);
    proc.on("error", reject);
    proc.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`watch exited ${code}: ${out}`))));
  });
  const printed = (text: string) =>
    new Promise<void>((resolve) => (out.includes(text) ? resolve() : waiting.push({ text, resolve })));
  return Object.assign(done, { printed });
}

describe("run console", () => {
  it("shows tokens as they arrive, approves a tool and shows the final answer; watch follows the run live and replays it", async () => {
    const faux = fauxModel(
      [
        fauxAssistantMessage(
          [fauxText("Looking the word up in the dictionary first."), fauxToolCall("lookup", { word: "hello" })],
          { stopReason: "toolUse" },
        ),
        fauxAssistantMessage("Final answer: hello is a greeting."),
      ],
      { tokensPerSecond: 20 },
    );
    const service = await startRunEventsService({
      client: env.client,
      port: 0,
      temporalUiUrl: "http://localhost:8233",
    });
    const taskQueue = uniqueId("tq");
    const worker = await createAgentWorker({
      connection: env.connection,
      taskQueue,
      tools: [lookup],
      workflowBundle: env.bundle,
      onEvent: service.onEvent,
      workerOptions: { identity: service.identity },
    });
    const browser = await launchChromium();
    try {
      await worker.runUntil(async () => {
        const workflowId = uniqueId("console");
        const handle = await startAgentRun(env.client, {
          taskQueue,
          workflowId,
          model: faux.getModel(),
          prompt: "What is hello?",
        });
        const token = service.server.token!;
        const live = watch(workflowId, token);
        const page = await browser.newPage();
        // The token comes in the fragment, as the worker prints it; the page keeps it and takes it out of the address bar.
        expect(service.server.consoleUrl).toBe(`${service.server.url}/#token=${token}`);
        await page.goto(`${service.server.url}/runs/${workflowId}/console#token=${token}`);
        // Tokens arrive: the streaming message grows before it is complete.
        await page.waitForFunction(
          () => Number((globalThis as any).document.body.dataset.deltas ?? 0) >= 3,
          undefined,
          { timeout: 60_000 },
        );
        await expect(page.locator(".assistant").first().textContent()).resolves.toContain("Looking the word up");
        expect(page.url()).toBe(`${service.server.url}/runs/${workflowId}/console`);
        // The person approves once watch, in another process, has shown the call waiting.
        await within(live.printed("waits for approval"), 60_000, "watch to show the waiting approval");
        await page.locator(".approval button.approve").click({ timeout: 60_000 });
        await page.waitForSelector("body[data-ended]", { timeout: 60_000 });
        await expect(page.locator(".assistant").last().textContent()).resolves.toBe(
          "Final answer: hello is a greeting.",
        );
        await expect(page.locator("details.tool .result").textContent()).resolves.toContain("hello: a greeting");
        await expect(page.locator("#ui").getAttribute("href")).resolves.toContain(workflowId);
        // Into a temp folder (JAI_SCREENSHOTS=docs retakes the docs' image): npm test leaves tracked files alone.
        const shot = screenshotPath("run-console.png");
        await page.screenshot({ path: shot, fullPage: true });
        expect(existsSync(shot)).toBe(true);
        const result = await handle.result();
        expect(result.stopReason).toBe("stop");
        const attached = await within(live, 60_000, "watch of the running run");
        expect(attached).toContain('→ lookup {"word":"hello"}');
        expect(attached).toContain("waits for approval");
        // The approve hint works as printed: it sends the token, named by its variable, never the token itself.
        expect(attached).toContain(
          `curl -X POST ${service.server.url}/runs/${workflowId}/approve -H "Authorization: Bearer $JAI_HTTP_TOKEN" -H 'content-type: application/json'`,
        );
        expect(attached).not.toContain(token);
        expect(attached).toContain("Final answer: hello is a greeting.");
        expect(attached).toMatch(/completed after 2 turn\(s\)/);
        const replayed = await within(watch(workflowId, token), 60_000, "watch of the finished run");
        expect(replayed).toContain("✓ lookup: hello: a greeting");
        expect(replayed).toContain("Final answer: hello is a greeting.");
      });
    } finally {
      await browser.close();
      await service.server.close();
    }
  }, 180_000);
});
