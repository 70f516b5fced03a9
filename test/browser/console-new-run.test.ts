/**
 * A newcomer's first run from the console (issue 57 row 1): a worker process with no config module, as
 * `npm run serve` starts one, serves the console; opened with the URL it printed, "New run" offers the models the
 * worker serves (the offline demo model first), starts a run from a model and a prompt, opens its page, and the
 * run completes there. The form uses the raw `POST /runs` the API already takes without agents: a server with
 * agents still offers them only, and its settings say nothing of raw runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../scripts/chromium.js";
import { getAgentRun } from "../../src/client/client.js";
import { startRunServer } from "../../src/http/server.js";
import { demoWorkspace, killAllWorkers, startSourceWorker, type WorkerProcess } from "../support/service/processes.js";
import { openTestEnv, uniqueId, within, type TestEnv } from "../support/helpers.js";

let env: TestEnv;
let worker: WorkerProcess;
let browser: Browser;
let consoleUrl: string;

beforeAll(async () => {
  env = await openTestEnv();
  const [started, chromium] = await Promise.all([
    // No --config and no JAI_CONFIG: the worker serves its defaults (file tools, the offline demo model).
    startSourceWorker(["--task-queue", uniqueId("newcomer"), "--http-port", "0", "--workspace", demoWorkspace()], {
      JAI_HTTP_TOKEN: undefined,
      JAI_CONFIG: undefined,
      JAI_MODEL: undefined,
      TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
    }),
    launchChromium(),
  ]);
  worker = started;
  browser = chromium;
  consoleUrl = /runs API and console on (http:\/\/127\.0\.0\.1:\d+\/#token=[\w-]+)/.exec(worker.output())?.[1] ?? "";
  if (!consoleUrl) throw new Error(`the worker printed no console URL: ${worker.output()}`);
}, 120_000);
afterAll(async () => {
  await browser?.close();
  if (worker) await within(worker.stop(), 60_000, "the worker to drain").catch(() => undefined);
  killAllWorkers();
  await env?.close();
});

describe("console: New run with no config module", () => {
  it("starts a run of the offline demo model from a model and a prompt, and the run completes on its page", async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(consoleUrl);
    const form = page.locator("form#new-run");
    await form.waitFor({ timeout: 30_000 });
    await expect(page.locator("section.newrun").textContent()).resolves.not.toContain("No agents are configured.");
    await expect(page.locator("#run-model").inputValue()).resolves.toBe("demo/offline-scripted");
    await page.locator("#prompt").fill("What is in this workspace?");
    await page.locator("#start").click();

    await page.waitForURL(/\/runs\/[^/]+\/console$/, { timeout: 30_000 });
    const workflowId = decodeURIComponent(/\/runs\/([^/]+)\/console$/.exec(page.url())![1]);
    await page.waitForSelector("body[data-ended]", { timeout: 90_000 });
    await expect(page.locator("#status").textContent()).resolves.toBe("completed");
    await expect(page.locator(".assistant").last().textContent()).resolves.toContain("Here is what I found");
    const result = await within(getAgentRun(env.client, workflowId).result(), 30_000, "the run's result");
    expect(result.stopReason).toBe("stop");
    expect(errors).toEqual([]);
  }, 150_000);

  it("a server with agents offers them only: its settings carry no raw-run form", async () => {
    const server = await startRunServer({
      client: env.client,
      port: 0,
      token: "t",
      models: ["demo/offline-scripted"],
      agents: [{ name: "helper", model: "demo/offline-scripted" }],
    });
    try {
      const settings = (await (
        await fetch(`${server.url}/console/settings`, { headers: { authorization: "Bearer t" } })
      ).json()) as Record<string, unknown>;
      expect(settings.rawRuns).toBeUndefined();
      expect(settings.models).toBeUndefined();
      // Raw input is still refused with agents configured (docs/security.md), the console notwithstanding.
      const raw = await fetch(`${server.url}/runs`, {
        method: "POST",
        headers: { authorization: "Bearer t", "content-type": "application/json" },
        body: JSON.stringify({ model: "demo/offline-scripted", prompt: "hi" }),
      });
      expect(raw.status).toBe(403);
      // And the settings, models included, need the token.
      expect((await fetch(`${server.url}/console/settings`)).status).toBe(401);
    } finally {
      await server.close();
    }
  });
});
