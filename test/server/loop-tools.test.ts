/** Tool-call rules the loop owns: validation, coercion, errors, terminate, scheduling. Real server, faux model. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type ToolCall } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentEvent, AgentTool, AgentToolResult, ToolExecutionMode } from "../../src/shared/contracts.js";
import {
  deferred,
  eventTrace,
  fauxModel,
  testWorker,
  textOf,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();

/** Runs one batch of tool calls then a final text answer; returns the result and events. */
async function runBatch(
  tools: AgentTool<any>[],
  calls: ToolCall[],
  extra: { toolExecution?: ToolExecutionMode; onEvent?: (event: AgentEvent) => void } = {},
) {
  const { onEvent, ...input } = extra;
  const faux = fauxModel([fauxAssistantMessage(calls, { stopReason: "toolUse" }), fauxAssistantMessage("finished")]);
  const events: AgentEvent[] = [];
  const { worker, taskQueue } = await testWorker(env, tools, {
    onEvent: (event) => void (events.push(event), onEvent?.(event)),
  });
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("wf"),
    model: faux.getModel(),
    prompt: "go",
    ...input,
  });
  const result = await worker.runUntil(handle.result());
  const toolResults = result.messages.flatMap((m) => (m.role === "toolResult" ? [m] : []));
  return { result, events, toolResults, faux };
}

const text = (t: string): AgentToolResult => ({ content: [{ type: "text", text: t }] });

describe("arguments", () => {
  it('coerces "3" to the number 3 before execute', async () => {
    const received: unknown[] = [];
    const add: AgentTool = {
      name: "add",
      description: "Adds",
      parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
      async execute(_id, args: any) {
        received.push(args);
        return text(String(args.a + args.b));
      },
    };
    const { toolResults } = await runBatch([add], [fauxToolCall("add", { a: "3", b: 4 })]);
    expect(received).toEqual([{ a: 3, b: 4 }]);
    expect(typeof (received[0] as { a: unknown }).a).toBe("number");
    expect(textOf(toolResults[0])).toBe("7");
    expect(toolResults[0].isError).toBe(false);
  });

  it("rejects invalid arguments without calling execute; the error names the field and the run goes on", async () => {
    let executed = 0;
    const add: AgentTool = {
      name: "add",
      description: "Adds",
      parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
      async execute() {
        executed++;
        return text("never");
      },
    };
    const { result, toolResults } = await runBatch([add], [fauxToolCall("add", { a: "three" })]);
    expect(executed).toBe(0);
    expect(toolResults[0].isError).toBe(true);
    expect(textOf(toolResults[0])).toMatch(/Validation failed for tool "add"/);
    expect(textOf(toolResults[0])).toMatch(/\ba: must be number/);
    expect(textOf(toolResults[0])).toMatch(/- b: must have required property 'b'/);
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe("finished");
  });

  it("answers an unknown tool with an error result and goes on", async () => {
    const { result, toolResults, events } = await runBatch([], [fauxToolCall("does_not_exist", { x: 1 })]);
    expect(toolResults[0]).toMatchObject({ isError: true, toolName: "does_not_exist" });
    expect(textOf(toolResults[0])).toBe("Tool does_not_exist not found");
    expect(result.stopReason).toBe("stop");
    expect(events).toContainEqual(expect.objectContaining({ type: "tool_execution_end", isError: true }));
  });

  it("turns a thrown error into an isError result with its message", async () => {
    const failing: AgentTool = {
      name: "fail",
      description: "Always fails",
      parameters: Type.Object({}),
      async execute() {
        throw new Error("disk on fire");
      },
    };
    const { result, toolResults } = await runBatch([failing], [fauxToolCall("fail", {})]);
    expect(toolResults[0].isError).toBe(true);
    expect(textOf(toolResults[0])).toBe("disk on fire");
    expect(result.stopReason).toBe("stop");
  });

  it("turns a malformed tool result into an isError result", async () => {
    const broken: AgentTool = {
      name: "broken",
      description: "Returns garbage",
      parameters: Type.Object({}),
      async execute() {
        return { content: "not an array" } as never;
      },
    };
    const { toolResults } = await runBatch([broken], [fauxToolCall("broken", {})]);
    expect(toolResults[0].isError).toBe(true);
    expect(textOf(toolResults[0])).toMatch(/invalid result/);
  });
});

describe("terminate", () => {
  const stopper = (name: string, terminate: boolean): AgentTool => ({
    name,
    description: "maybe stops",
    parameters: Type.Object({}),
    async execute() {
      return { ...text(name), terminate };
    },
  });

  it("ends the run when every result of the batch says terminate", async () => {
    const { result, faux } = await runBatch(
      [stopper("a", true), stopper("b", true)],
      [fauxToolCall("a", {}), fauxToolCall("b", {})],
    );
    expect(result.stopReason).toBe("terminate");
    expect(result.turns).toBe(1);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "toolResult"]);
    expect(faux.state.callCount).toBe(1);
  });

  it("goes on when only some results say terminate", async () => {
    const { result, faux } = await runBatch(
      [stopper("a", true), stopper("b", false)],
      [fauxToolCall("a", {}), fauxToolCall("b", {})],
    );
    expect(result.stopReason).toBe("stop");
    expect(result.turns).toBe(2);
    expect(faux.state.callCount).toBe(2);
  });
});

describe("scheduling", () => {
  /** A tool that records when it started and ended, and can be made to wait. */
  function recorder(
    name: string,
    mode: ToolExecutionMode | undefined,
    log: string[],
    waitFor?: () => Promise<unknown>,
  ) {
    const started = deferred();
    const ended = deferred();
    const tool: AgentTool = {
      name,
      description: name,
      parameters: Type.Object({}),
      executionMode: mode,
      async execute() {
        log.push(`start:${name}`);
        started.resolve();
        if (waitFor) await within(waitFor(), 10000, `${name}'s condition`).catch(() => undefined);
        log.push(`end:${name}`);
        ended.resolve();
        return text(name);
      },
    };
    return { tool, started, ended };
  }

  it("runs parallel calls concurrently", async () => {
    const log: string[] = [];
    // Each waits until the other has started: only concurrent execution gets both to the end quickly.
    const a = recorder("a", "parallel", log, () => b.started.promise);
    const b = recorder("b", "parallel", log, () => a.started.promise);
    const { toolResults } = await runBatch([a.tool, b.tool], [fauxToolCall("a", {}), fauxToolCall("b", {})]);
    expect(log.indexOf("start:b")).toBeLessThan(log.indexOf("end:a"));
    expect(log.indexOf("start:a")).toBeLessThan(log.indexOf("end:b"));
    expect(toolResults.map((r) => r.toolName)).toEqual(["a", "b"]);
  });

  it("never overlaps a sequential call with another, and keeps results in source order", async () => {
    const log: string[] = [];
    // p1 finishes only after the workflow reported p2's end, so completion order differs from source order.
    const p2Reported = deferred();
    const p2 = recorder("p2", undefined, log);
    const p1 = recorder("p1", undefined, log, () => p2Reported.promise);
    const s = recorder("s", "sequential", log);
    const p3 = recorder("p3", undefined, log);
    const { toolResults, events } = await runBatch(
      [p1.tool, p2.tool, s.tool, p3.tool],
      [fauxToolCall("p1", {}), fauxToolCall("p2", {}), fauxToolCall("s", {}), fauxToolCall("p3", {})],
      { onEvent: (e) => void (e.type === "tool_execution_end" && e.toolName === "p2" && p2Reported.resolve()) },
    );
    // p1 and p2 run first (the worker may pick either up first), p2 ends first; then s alone; then p3.
    expect(log.slice(0, 4).sort()).toEqual(["end:p1", "end:p2", "start:p1", "start:p2"]);
    expect(log.indexOf("end:p2")).toBeLessThan(log.indexOf("end:p1"));
    expect(log.slice(4)).toEqual(["start:s", "end:s", "start:p3", "end:p3"]);
    expect(toolResults.map((r) => r.toolName)).toEqual(["p1", "p2", "s", "p3"]);
    // Each call ends when it finishes (p2 before p1); each group's results follow it in source order.
    const batch = eventTrace(events).filter((t) => t.startsWith("tool_execution") || t.endsWith(":toolResult"));
    expect(batch).toEqual([
      "tool_execution_start:p1",
      "tool_execution_start:p2",
      "tool_execution_end:p2",
      "tool_execution_end:p1",
      "message_start:toolResult",
      "message_end:toolResult",
      "message_start:toolResult",
      "message_end:toolResult",
      "tool_execution_start:s",
      "tool_execution_end:s",
      "message_start:toolResult",
      "message_end:toolResult",
      "tool_execution_start:p3",
      "tool_execution_end:p3",
      "message_start:toolResult",
      "message_end:toolResult",
    ]);
    const resultOrder = events.flatMap((e) =>
      e.type === "message_end" && e.message.role === "toolResult" ? [e.message.toolName] : [],
    );
    expect(resultOrder).toEqual(["p1", "p2", "s", "p3"]);
  });

  it("runs everything one by one when the run's mode is sequential", async () => {
    const log: string[] = [];
    const a = recorder("a", undefined, log);
    const b = recorder("b", undefined, log);
    await runBatch([a.tool, b.tool], [fauxToolCall("a", {}), fauxToolCall("b", {})], { toolExecution: "sequential" });
    expect(log).toEqual(["start:a", "end:a", "start:b", "end:b"]);
  });

  it("lets a tool's own parallel mode override a sequential run", async () => {
    const log: string[] = [];
    const a = recorder("a", "parallel", log, () => b.started.promise);
    const b = recorder("b", "parallel", log, () => a.started.promise);
    await runBatch([a.tool, b.tool], [fauxToolCall("a", {}), fauxToolCall("b", {})], { toolExecution: "sequential" });
    expect(log.slice(0, 2).sort()).toEqual(["start:a", "start:b"]);
  });
});
