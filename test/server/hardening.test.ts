/**
 * Nothing a client sends can kill, hang or corrupt a run (issue 9, rows 1, 2,
 * 3, 7): every input is bounded in UTF-8 bytes before it reaches history, the
 * carry across continue-as-new always fits, and continue-as-new never waits on
 * a caller. Real dev server, faux model.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { InvalidRunInputError, RunUpdateRejectedError, startAgentRun } from "../../src/client/client.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { jsonBytes, utf8Bytes } from "../../src/shared/payload-limits.js";
import { followUpUpdate } from "../../src/shared/definitions.js";
import {
  fauxModel,
  gateTool,
  rejection,
  testWorker,
  textOf,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();

/** How each run of the chain ended, oldest first, read from the histories (following continue-as-new links). */
async function runEndings(workflowId: string): Promise<string[]> {
  const out: string[] = [];
  const first =
    (await env.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.firstRunId ?? undefined;
  for (let runId: string | undefined = first; runId; ) {
    const history = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const last = history.events?.at(-1);
    const continued = last?.workflowExecutionContinuedAsNewEventAttributes;
    out.push(
      continued
        ? "CONTINUED_AS_NEW"
        : last?.workflowExecutionCompletedEventAttributes
          ? "COMPLETED"
          : last?.workflowExecutionTerminatedEventAttributes
            ? "TERMINATED"
            : last?.workflowExecutionFailedEventAttributes
              ? "FAILED"
              : "OTHER",
    );
    runId = continued?.newExecutionRunId ?? undefined;
  }
  return out;
}

describe("byte budgets", () => {
  it("counts UTF-8 bytes, not UTF-16 units", () => {
    expect(utf8Bytes("abc")).toBe(3);
    expect(utf8Bytes("é")).toBe(2);
    expect(utf8Bytes("€")).toBe(3);
    expect(utf8Bytes("😀")).toBe(4);
    const text = "€😀é a";
    expect(utf8Bytes(text)).toBe(Buffer.byteLength(text, "utf8"));
    expect(jsonBytes({ t: "€".repeat(1000) })).toBe(Buffer.byteLength(JSON.stringify({ t: "€".repeat(1000) }), "utf8"));
  });

  it("refuses a 3 MB prompt at start with a typed error naming the prompt and the limit, starting nothing", async () => {
    const workflowId = uniqueId("big-prompt");
    const start = startAgentRun(env.client, {
      taskQueue: uniqueId("tq"),
      workflowId,
      model: "faux/x",
      prompt: "x".repeat(3 * 1024 * 1024),
    });
    await expect(start).rejects.toThrow(InvalidRunInputError);
    await expect(start).rejects.toThrow(/"prompt" is 3,145,7\d\d bytes .*the limit is 1,000,000 bytes/);
    // Non-ASCII text is counted in UTF-8 bytes: 400,000 "€" are 1.2 MB, though only 400,000 UTF-16 units.
    await expect(
      startAgentRun(env.client, { taskQueue: uniqueId("tq"), model: "faux/x", prompt: "€".repeat(400_000) }),
    ).rejects.toThrow(/"prompt" is 1,200,00\d bytes/);
    await expect(env.client.workflow.getHandle(workflowId).describe()).rejects.toThrow();
  });

  it("refuses oversize steering, follow-ups and session prompts without touching the run", async () => {
    const g = gateTool();
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("gate", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [g.tool]);
    const workflowId = uniqueId("big-steer");
    const handle = await startAgentRun(env.client, { taskQueue, workflowId, model: faux.getModel(), prompt: "go" });
    const big = "x".repeat(2.2 * 1024 * 1024);
    const result = await worker.runUntil(async () => {
      await within(g.entered.promise, 20000, "the gate");
      // The client refuses it before sending, with a typed error naming the size and the limit.
      await expect(handle.steer(big)).rejects.toThrow(RunUpdateRejectedError);
      expect(await rejection(handle.steer(big))).toMatch(/"message" is 2,306,86\d bytes .*the limit is 256,000 bytes/);
      expect(await rejection(handle.followUp({ role: "user", content: big, timestamp: 1 }))).toMatch(
        /the limit is 256,000 bytes/,
      );
      expect(await rejection(handle.prompt(big))).toMatch(/the limit is 256,000 bytes/);
      // 100,000 "€" are 300 KB in UTF-8 (100,000 UTF-16 units): refused by the run itself, with the reason.
      expect(await rejection(handle.workflow.executeUpdate(followUpUpdate, { args: ["€".repeat(100_000)] }))).toMatch(
        /"message" is 300,00\d bytes/,
      );
      g.release.resolve();
      return handle.result();
    });
    expect(result.stopReason).toBe("stop");
    expect(await runEndings(workflowId)).toEqual(["COMPLETED"]);
    const history = await handle.workflow.fetchHistory();
    expect(history.events?.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toHaveLength(0);
  });

  it("bounds what is queued, so the continue-as-new carry always fits", async () => {
    const g = gateTool();
    const seen: Context[] = [];
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("gate", {})], { stopReason: "toolUse" }),
      (context) => (seen.push(structuredClone(context)), fauxAssistantMessage("read the steering")),
      (context) => (seen.push(structuredClone(context)), fauxAssistantMessage("read them all")),
    ]);
    const { worker, taskQueue } = await testWorker(env, [g.tool]);
    const workflowId = uniqueId("queue-budget");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "go",
      continueAsNew: { afterTurns: 1 },
    });
    const chunk = "é".repeat(100_000); // 200 KB each in UTF-8
    const result = await worker.runUntil(async () => {
      await within(g.entered.promise, 20000, "the gate");
      expect(await handle.steer(chunk)).toEqual({ queued: 1 });
      expect(await handle.followUp(chunk)).toEqual({ queued: 1 });
      expect(await rejection(handle.steer(chunk))).toMatch(
        /Queue full: 400,\d+ bytes of messages are waiting .* at most 512,000 bytes/,
      );
      g.release.resolve();
      return handle.result();
    });
    expect([result.stopReason, result.errorMessage]).toEqual(["stop", undefined]);
    // It continued as new (after turn 1) carrying 400 KB of queued messages, and nothing was terminated.
    const endings = await runEndings(workflowId);
    expect(endings).toContain("CONTINUED_AS_NEW");
    expect(endings).not.toContain("TERMINATED");
    // Both queued messages reached the model, once each, across the continue-as-new.
    expect(seen[0].messages.filter((m) => m.role === "user" && textOf(m) === chunk)).toHaveLength(1);
    expect(seen[1].messages.filter((m) => m.role === "user" && textOf(m) === chunk)).toHaveLength(2);
    expect(textOf(result.messages.at(-1))).toBe("read them all");
  });
});

describe("continue-as-new never waits on a caller", () => {
  it("continues a session as new inside a prompt that needs more turns than afterTurns, and answers it", async () => {
    const echo: AgentTool = {
      name: "step",
      description: "one step",
      parameters: Type.Object({ n: Type.Number() }),
      async execute(_id, { n }) {
        return { content: [{ type: "text", text: `step ${n}` }] };
      },
    };
    // Answers from the context: a prompt "N" takes N tool turns, then answers.
    const reply = (context: Context) => {
      const lastUser = [...context.messages].reverse().find((m) => m.role === "user");
      const want = Number(textOf(lastUser).split(" ").at(-1));
      const after = context.messages.slice(context.messages.lastIndexOf(lastUser!));
      const steps = after.filter((m) => m.role === "toolResult").length;
      return steps < want
        ? fauxAssistantMessage([fauxToolCall("step", { n: steps + 1 })], { stopReason: "toolUse" })
        : fauxAssistantMessage(`did ${steps} steps`);
    };
    const faux = fauxModel(Array.from({ length: 40 }, () => reply));
    const { worker, taskQueue } = await testWorker(env, [echo]);
    const workflowId = uniqueId("session-can");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "steps 1",
      session: true,
      continueAsNew: { afterTurns: 2 },
    });
    const answers = await worker.runUntil(async () => {
      const two = await within(handle.prompt("steps 4"), 30000, "the 4-turn prompt");
      const three = await within(handle.prompt("steps 7"), 30000, "the 8-turn prompt");
      await handle.close();
      await handle.result();
      return [two, three];
    });
    expect(answers.map((a) => [a.stopReason, textOf(a.messages.at(-1))])).toEqual([
      ["stop", "did 4 steps"],
      ["stop", "did 7 steps"],
    ]);
    // The first message of each answer is its prompt, even though the runs continued as new in the middle.
    expect(answers.map((a) => textOf(a.messages[0]))).toEqual(["steps 4", "steps 7"]);
    const endings = await runEndings(workflowId);
    expect(endings.filter((e) => e === "CONTINUED_AS_NEW").length).toBeGreaterThanOrEqual(5);
    expect(endings).not.toContain("TERMINATED");
  });
});
