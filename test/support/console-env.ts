/**
 * What a console page test needs (its beforeAll and afterAll registered here): the test server's environment, a
 * run events service (the run API and console, with the tap workers send their events to) and Chromium.
 */
import { afterAll, beforeAll } from "@jest/globals";
import type { Browser } from "playwright-core";
import { launchChromium } from "../../scripts/chromium.js";
import { startRunEventsService, type RunEventsService } from "../../src/worker/events/serve.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { openTestEnv, uniqueId, type TestEnv } from "./helpers.js";

export interface ConsoleEnv {
  env: TestEnv;
  service: RunEventsService;
  browser: Browser;
}

/** Registers the hooks; the returned object is filled in by beforeAll. */
export function withConsoleEnv(): ConsoleEnv {
  const ctx = {} as ConsoleEnv;
  beforeAll(async () => {
    ctx.env = await openTestEnv();
    ctx.service = await startRunEventsService({ client: ctx.env.client, port: 0 });
    ctx.browser = await launchChromium();
  });
  afterAll(async () => {
    await ctx.browser?.close();
    await ctx.service?.server.close();
    await ctx.env?.close();
  });
  return ctx;
}

/** A worker on a queue of its own with `tools`, its events going to the console's service. */
export async function consoleWorker(ctx: ConsoleEnv, tools: AgentTool<any>[] = []) {
  const taskQueue = uniqueId("tq");
  const worker = await createAgentWorker({
    connection: ctx.env.connection,
    taskQueue,
    tools,
    workflowBundle: ctx.env.bundle,
    onEvent: ctx.service.onEvent,
    workerOptions: { identity: ctx.service.identity },
  });
  return { worker, taskQueue };
}
