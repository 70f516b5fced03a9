/** The offline demo of `npm start`: scripted model + the shipped file tools, through the real workflow. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { startAgentRun } from "../../src/client/client.js";
import { DEMO_LABEL, registerDemoModel } from "../../src/demo/offline-model.js";
import { createFileTools } from "../../src/worker/tools/fs-tools.js";
import { openTestEnv, stateWhen, testWorker, textOf, uniqueId, type TestEnv } from "../support/helpers.js";

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

  it("without a key shows each feature: an approval a policy asks for, a client tool's wait, a typed result", async () => {
    const model = registerDemoModel();
    const { worker, taskQueue } = await testWorker(env, createFileTools(workspace), { models: [model] });
    const start = (id: string, extra: Record<string, unknown>) =>
      startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId(id),
        model: "demo/offline-scripted",
        prompt: "What is this?",
        ...extra,
      });
    await worker.runUntil(async () => {
      // An approval policy that asks before reading: the run waits for a person, then goes on.
      const asked = await start("demo-ask", { approvalPolicy: { rules: [{ match: "read_file", action: "ask" }] } });
      const waiting = await stateWhen(asked, (s) => s.pendingApprovals.length > 0, "the approval");
      for (const a of waiting.pendingApprovals) await asked.approve(a.toolCallId);
      expect((await asked.result()).stopReason).toBe("stop");
      // A client tool: the demo calls it, the run waits for a client's result, and answers after it.
      const client = await start("demo-client", {
        clientTools: [
          {
            name: "pick_color",
            description: "Asks the user to pick a color",
            parameters: { type: "object", properties: { hint: { type: "string" } }, required: ["hint"] },
          },
        ],
      });
      const call = await stateWhen(client, (s) => (s.pendingClientResults ?? []).length > 0, "the client tool");
      await client.submitToolResult(call.pendingClientResults![0].toolCallId, { color: "teal" });
      expect((await client.result()).stopReason).toBe("stop");
      // A typed output: the answer comes through the final tool and validates.
      const typed = await start("demo-typed", {
        output: {
          type: "object",
          properties: { summary: { type: "string" }, entries: { type: "integer" }, ok: { type: "boolean" } },
          required: ["summary", "entries", "ok"],
        },
      });
      const result = await typed.result();
      expect(result.stopReason).toBe("stop");
      expect(result.output).toMatchObject({ entries: expect.any(Number), ok: true });
      expect(String((result.output as { summary: string }).summary)).toContain(DEMO_LABEL);
    });
  });
});
