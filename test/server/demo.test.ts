/** The offline demo of `npm start`: scripted model + the shipped file tools, through the real workflow. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startAgentRun } from "../../src/client/client.js";
import { DEMO_LABEL, registerDemoModel } from "../../src/demo/offline-model.js";
import { createFileTools } from "../../src/worker/tools/fs-tools.js";
import { openTestEnv, testWorker, textOf, uniqueId, type TestEnv } from "../support/helpers.js";

let env: TestEnv;
let workspace: string;
beforeAll(async () => {
  env = await openTestEnv();
  workspace = await mkdtemp(path.join(os.tmpdir(), "jai-demo-"));
  await writeFile(
    path.join(workspace, "package.json"),
    JSON.stringify({ name: "demo-pkg", description: "a demo", dependencies: { a: "1" } }),
  );
  await writeFile(path.join(workspace, "README.md"), "# Demo Project\n\nHello.\n");
});
afterAll(async () => {
  await env?.close();
  await rm(workspace, { recursive: true, force: true });
});

describe("offline demo", () => {
  it("lists the workspace, reads files in parallel and summarises them", async () => {
    const model = registerDemoModel();
    const { worker, taskQueue, events } = await testWorker(env, createFileTools(workspace), { models: [model] });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("demo"),
      model: "demo/offline-scripted",
      prompt: "What is this?",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.turns).toBe(3);
    const starts = events.flatMap((e) =>
      e.type === "tool_execution_start" ? [`${e.toolName} ${(e.args as { path: string }).path}`] : [],
    );
    expect(starts).toEqual(["list_dir .", "read_file package.json", "read_file README.md"]);
    const answer = textOf(result.messages.at(-1));
    expect(answer).toContain(DEMO_LABEL);
    expect(answer).toContain('package "demo-pkg" (a demo), 1 dependencies');
    expect(answer).toContain('README.md: titled "Demo Project"');
  });
});
