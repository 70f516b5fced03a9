/** `npm start` never orphans a run: Ctrl-C cancels it and waits for it to close; TEMPORAL_ADDRESS / --address pick the server. */
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AgentRunResult } from "../../src/shared/contracts.js";
import { openTestEnv, within, type TestEnv } from "../support/helpers.js";
import { repoRoot } from "../support/service/processes.js";
import { nodeEntry } from "../support/entry.js";

let env: TestEnv;
let workspace: string;
beforeAll(async () => {
  env = await openTestEnv();
  workspace = mkdtempSync(path.join(os.tmpdir(), "jai-start-"));
  writeFileSync(path.join(workspace, "README.md"), "# Start\n");
});
afterAll(async () => {
  await env?.close();
  rmSync(workspace, { recursive: true, force: true });
});

it("Ctrl-C during `npm start --address …` cancels the run, which closes as aborted; the process exits 0", async () => {
  const child = spawn(
    process.execPath,
    [
      ...nodeEntry(path.join(repoRoot, "src/cli/start.ts")),
      "--address",
      process.env.TEMPORAL_ADDRESS!,
      "What is here?",
    ],
    {
      cwd: repoRoot,
      env: { ...process.env, NODE_OPTIONS: "", JAI_WORKSPACE: workspace, JAI_MODEL: "", TEMPORAL_ADDRESS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  // Interrupt as soon as the run has started (the demo model is fast: the whole run takes about a second).
  const workflowId = await within(
    new Promise<string>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        const id = /^Run (\S+) /m.exec(output)?.[1];
        if (id) resolve(id);
      };
      child.stdout!.on("data", onData);
      child.stderr!.on("data", onData);
      void exited.then((code) => reject(new Error(`npm start exited ${code}: ${output}`)));
    }),
    60000,
    "the run to start",
  );
  expect(output).not.toContain("embedded dev server");
  child.kill("SIGINT");
  expect(await within(exited, 60000, "npm start to exit")).toBe(0);
  expect(output).toContain("Cancelling the run");
  // It followed the run through its own run server, with the token that server minted (in the console URL's fragment).
  expect(output).toMatch(/the console http:\/\/127\.0\.0\.1:\d+\/runs\/\S+\/console#token=[\w-]{32,}/);
  expect(output).not.toContain("following the run failed");
  const handle = env.client.workflow.getHandle(workflowId);
  expect((await handle.describe()).status.name).not.toBe("RUNNING");
  const result = (await handle.result()) as AgentRunResult;
  expect(result.stopReason).toBe("aborted");
});
