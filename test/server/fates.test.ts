/**
 * Every accepted request has a fate (issue 19, rows 1-7): nothing queued is
 * lost at continue-as-new or at the end of a run, bad settings and malformed
 * messages are refused before they can wedge a run, helper activities never
 * fail a run, and every ending emits agent_end exactly once. Real dev server.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { WorkflowFailedError } from "@temporalio/client";
import { Worker } from "@temporalio/worker";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { InvalidRunInputError, RunUpdateRejectedError, startAgentRun } from "../../src/client/client.js";
import type { AgentEvent, AgentRunInput, AgentTool } from "../../src/shared/contracts.js";
import { AGENT_RUN_WORKFLOW, promptUpdate } from "../../src/shared/definitions.js";
import { readLog, startChildWorker, waitFor } from "../support/crash/harness.js";
import { MODEL_REF } from "../support/crash/scenario.js";
import {
  errorChain,
  fauxModel,
  gateTool,
  rejection,
  openTestEnv,
  testWorker,
  textOf,
  uniqueId,
  within,
  type TestEnv,
} from "../support/helpers.js";

let env: TestEnv;
let dir: string;
beforeAll(async () => {
  env = await openTestEnv();
  dir = await mkdtemp(path.join(os.tmpdir(), "jai-fates-"));
});
afterAll(async () => {
  await env?.close();
  await rm(dir, { recursive: true, force: true });
});

const ends = (events: AgentEvent[]) => events.filter((e) => e.type === "agent_end").length;

describe("nothing queued is lost", () => {
  it("carries close() across continue-as-new: the session ends after the prompt, not at the idle timeout", async () => {
    const g = gateTool();
    const faux = fauxModel([
      fauxAssistantMessage("hello"),
      fauxAssistantMessage([fauxToolCall("gate", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage("second answer"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [g.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("close-can"),
      model: faux.getModel(),
      prompt: "hi",
      session: true,
      continueAsNew: { afterTurns: 1 },
    });
    const result = await worker.runUntil(async () => {
      const answer = handle.prompt("use the gate");
      await within(g.entered.promise, 20000, "the gate");
      await handle.close();
      g.release.resolve();
      expect(textOf((await within(answer, 20000, "the answer")).messages.at(-1))).toBe("second answer");
      return within(handle.result(), 20000, "the session's end (not the 1 h idle timeout)");
    });
    expect(result.stopReason).toBe("stop");
  });

  it("refuses steering and follow-ups on an idle session with the reason", async () => {
    const faux = fauxModel([fauxAssistantMessage("hello")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("idle-steer"),
      model: faux.getModel(),
      prompt: "hi",
      session: true,
    });
    await worker.runUntil(async () => {
      await waitFor(
        async () => (await handle.state()).status === "waiting_for_prompt",
        20000,
        "the session to go idle",
      );
      expect(await rejection(handle.steer("wake up"))).toMatch(/waiting for a prompt: send it with prompt\(\)/);
      expect(await rejection(handle.followUp("and then"))).toMatch(/waiting for a prompt/);
      expect((await handle.state()).queuedSteering).toBe(0);
      await handle.close();
      return handle.result();
    });
  });

  it("reports steering and follow-ups the run could not process as dropped, with why", async () => {
    const g = gateTool();
    const faux = fauxModel([fauxAssistantMessage([fauxToolCall("gate", {})], { stopReason: "toolUse" })]);
    const { worker, taskQueue, events } = await testWorker(env, [g.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("dropped"),
      model: faux.getModel(),
      prompt: "go",
      maxTurns: 1,
    });
    const result = await worker.runUntil(async () => {
      await within(g.entered.promise, 20000, "the gate");
      expect(await handle.steer("change of plan")).toEqual({ queued: 1 });
      expect(await handle.followUp("and one more thing")).toEqual({ queued: 1 });
      g.release.resolve();
      return handle.result();
    });
    expect(result.stopReason).toBe("max_turns");
    expect(result.dropped).toEqual([
      { kind: "steer", preview: "change of plan", reason: "run ended: max_turns" },
      { kind: "followUp", preview: "and one more thing", reason: "run ended: max_turns" },
    ]);
    expect((await handle.state()).dropped).toEqual(result.dropped);
    expect(ends(events)).toBe(1);
  });
});

describe("bad settings are refused before the run starts", () => {
  const cases: [string, Partial<AgentRunInput>, RegExp][] = [
    ["approvalTimeout", { approvalTimeout: "soon" }, /"approvalTimeout" is not a duration: "soon"/],
    ["session.idleTimeout", { session: { idleTimeout: "soon" } }, /"session.idleTimeout" is not a duration/],
    [
      "modelActivity.heartbeatTimeout",
      { modelActivity: { heartbeatTimeout: "soon" } },
      /"modelActivity.heartbeatTimeout" is not a duration/,
    ],
    [
      "modelActivity.retry.maximumAttempts",
      { modelActivity: { retry: { maximumAttempts: -1 } } },
      /"modelActivity.retry.maximumAttempts" must be a positive integer/,
    ],
    [
      "modelActivity.retry.maximumInterval",
      { modelActivity: { retry: { initialInterval: "10s", maximumInterval: "1s" } } },
      /maximumInterval cannot be less than its initialInterval/,
    ],
    [
      "modelActivity.startToCloseTimeout",
      { modelActivity: { startToCloseTimeout: -5 } },
      /must be a positive duration/,
    ],
  ];

  it.each(cases)("startAgentRun names %s", async (_field, extra, message) => {
    const start = startAgentRun(env.client, { taskQueue: uniqueId("tq"), model: "faux/x", prompt: "hi", ...extra });
    await expect(start).rejects.toThrow(InvalidRunInputError);
    await expect(start).rejects.toThrow(message);
  });

  it("a run started around the client fails at once with the same message, never a task retried forever", async () => {
    const { worker, taskQueue, events } = await testWorker(env, []);
    const err = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(AGENT_RUN_WORKFLOW, {
        taskQueue,
        workflowId: uniqueId("raw-bad"),
        args: [{ model: "faux/x", prompt: "hi", approvalTimeout: "soon" }],
      });
      return within(handle.result(), 20000, "the run to fail").catch((e) => e);
    });
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(errorChain(err)).toMatch(/Invalid run input: "approvalTimeout" is not a duration/);
    expect(ends(events)).toBe(1);
  });

  it("a tool the worker configured with a bad duration fails the run cleanly, naming it", async () => {
    const tool: AgentTool = {
      name: "odd",
      description: "odd",
      parameters: Type.Object({}),
      activity: { heartbeatTimeout: "soon" },
      execute: async () => ({ content: [] }),
    };
    const faux = fauxModel([fauxAssistantMessage("never")]);
    const { worker, taskQueue } = await testWorker(env, [tool]);
    const err = await worker.runUntil(async () => {
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("bad-tool"),
        model: faux.getModel(),
        prompt: "hi",
      });
      return within(handle.result(), 20000, "the run to fail").catch((e) => e);
    });
    expect(errorChain(err)).toMatch(
      /Invalid tool configuration in the worker: "odd.activity.heartbeatTimeout" is not a duration/,
    );
  });
});

describe("malformed messages never poison a session", () => {
  const bad: [string, unknown][] = [
    ["empty content", { role: "user", content: [], timestamp: 1 }],
    ["a text block without text", { role: "user", content: [{ type: "text" }], timestamp: 1 }],
    ["an image without data", { role: "user", content: [{ type: "image", mimeType: "image/png" }], timestamp: 1 }],
    [
      "a tool call in a user message",
      { role: "user", content: [{ type: "toolCall", id: "x", name: "y", arguments: {} }], timestamp: 1 },
    ],
    ["an assistant message", { role: "assistant", content: [], timestamp: 1 }],
  ];

  it("refuses each at the door and keeps answering valid prompts", async () => {
    const faux = fauxModel([fauxAssistantMessage("first"), fauxAssistantMessage("second")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("bad-prompts"),
      model: faux.getModel(),
      prompt: "hi",
      session: true,
    });
    const answer = await worker.runUntil(async () => {
      for (const [what, message] of bad) {
        // Our client refuses it before sending; a raw client is refused by the run's validator.
        await expect(handle.prompt(message as never)).rejects.toThrow(RunUpdateRejectedError);
        const raw = await rejection(handle.workflow.executeUpdate(promptUpdate, { args: [message as never] }));
        expect([what, raw]).toEqual([what, expect.stringMatching(/Invalid message: "message/)]);
      }
      const ok = await handle.prompt("are you still there?");
      await handle.close();
      await handle.result();
      return ok;
    });
    expect([answer.stopReason, textOf(answer.messages.at(-1))]).toEqual(["stop", "second"]);
  });
});

describe("helper activities never fail a run", () => {
  it("an approval predicate slower than the tool's heartbeat timeout still decides", async () => {
    let ran = 0;
    const tool: AgentTool = {
      name: "slow_check",
      description: "a tool whose approval predicate is slow",
      parameters: Type.Object({}),
      activity: { heartbeatTimeout: "1s" },
      requiresApproval: async () => (await new Promise((r) => setTimeout(r, 2500)), false),
      execute: async () => (ran++, { content: [{ type: "text", text: "ran" }] }),
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("slow_check", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("slow-predicate"),
      model: faux.getModel(),
      prompt: "go",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(ran).toBe(1);
    expect(ends(events)).toBe(1);
  });

  it("an approval check that keeps failing becomes the call's error result and the run goes on", async () => {
    const tool: AgentTool = {
      name: "stuck_check",
      description: "a tool whose approval predicate never answers",
      parameters: Type.Object({}),
      activity: { startToCloseTimeout: "1s" },
      requiresApproval: () => new Promise<boolean>(() => {}),
      execute: async () => ({ content: [{ type: "text", text: "ran" }] }),
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("stuck_check", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage("carried on"),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("stuck-predicate"),
      model: faux.getModel(),
      prompt: "go",
    });
    const result = await worker.runUntil(within(handle.result(), 40000, "the run"));
    const toolResult = result.messages.find((m) => m.role === "toolResult");
    expect(toolResult).toMatchObject({ isError: true });
    expect(textOf(toolResult)).toMatch(/stuck_check: its approval check failed .*so the call did not run/);
    expect([result.stopReason, textOf(result.messages.at(-1))]).toEqual(["stop", "carried on"]);
    expect(ends(events)).toBe(1);
  });
});

describe("every ending emits agent_end once, and a cancel ends as aborted", () => {
  it("cancel on an idle session: aborted, and no second agent_end", async () => {
    const faux = fauxModel([fauxAssistantMessage("hello")]);
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("idle-cancel"),
      model: faux.getModel(),
      prompt: "hi",
      session: true,
    });
    const result = await worker.runUntil(async () => {
      await waitFor(
        async () => (await handle.state()).status === "waiting_for_prompt",
        20000,
        "the session to go idle",
      );
      await handle.cancel();
      return handle.result();
    });
    expect(result.stopReason).toBe("aborted");
    expect(ends(events)).toBe(1);
  });

  it("cancel while the worker running the model call is dead ends as aborted, not as an error", async () => {
    const bundlePath = path.join(dir, "bundle.js");
    await writeFile(bundlePath, env.bundle.code);
    const taskQueue = uniqueId("dead-model");
    const logFile = path.join(dir, `${taskQueue}.log`);
    const child = await startChildWorker({
      address: process.env.TEMPORAL_ADDRESS!,
      bundlePath,
      logFile,
      taskQueue,
      variant: "main",
    });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: taskQueue,
      model: MODEL_REF,
      prompt: "Run the crash scenario",
      modelActivity: { heartbeatTimeout: "2s" },
      workflowTaskTimeout: "2s",
    });
    await waitFor(() => readLog(logFile).some((e) => e.event === "streaming"), 30000, "the model to stream");
    await child.kill();
    // A worker that runs workflow tasks only: nobody can take the model call up again.
    const workflowsOnly = await Worker.create({ connection: env.connection, taskQueue, workflowBundle: env.bundle });
    const result = await workflowsOnly.runUntil(async () => {
      await handle.cancel();
      return within(handle.result(), 30000, "the cancelled run");
    });
    expect([result.stopReason, result.errorMessage]).toEqual(["aborted", "Run cancelled"]);
  });
});
