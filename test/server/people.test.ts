/** People in the loop: steering, follow-ups, tool approval, sessions, cancellation. Real server, faux model. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { RunUpdateRejectedError, startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentEvent, AgentTool } from "../../src/shared/contracts.js";
import { ABORTED_BY_CANCEL, SKIPPED_BY_STEERING } from "../../src/workflows/tool-calls.js";
import {
  deferred,
  eventTrace,
  fauxModel,
  gateTool,
  testWorker,
  textOf,
  toolEventProblems,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();

/** Resolves when the collected events contain one matching `match`. */
function eventSeen(events: AgentEvent[], match: (e: AgentEvent) => boolean) {
  const seen = deferred<AgentEvent>();
  const push = events.push.bind(events);
  events.push = (...items: AgentEvent[]) => {
    for (const item of items) if (match(item)) seen.resolve(item);
    return push(...items);
  };
  const already = events.find(match);
  if (already) seen.resolve(already);
  return within(seen.promise, 20000, "an event");
}

const lastUserText = (context: Context) => textOf([...context.messages].reverse().find((m) => m.role === "user"));

describe("steering", () => {
  it("skips the unstarted calls of a batch, lets running ones finish, and enters before the next model call", async () => {
    const a = gateTool("a");
    const b = gateTool("b");
    const c = gateTool("c", "sequential");
    const d = gateTool("d");
    const contexts: Context[] = [];
    const faux = fauxModel([
      fauxAssistantMessage(
        [fauxToolCall("a", {}), fauxToolCall("b", {}), fauxToolCall("c", {}), fauxToolCall("d", {})],
        { stopReason: "toolUse" },
      ),
      (context) => (contexts.push(structuredClone(context)), fauxAssistantMessage(`ok: ${lastUserText(context)}`)),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [a.tool, b.tool, c.tool, d.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("steer"),
      model: faux.getModel(),
      prompt: "do four things",
    });
    const result = await worker.runUntil(async () => {
      await Promise.all([within(a.entered.promise, 20000, "a"), within(b.entered.promise, 20000, "b")]);
      expect(await handle.steer("stop, do something else")).toEqual({ queued: 1 });
      expect((await handle.state()).queuedSteering).toBe(1);
      a.release.resolve();
      b.release.resolve();
      return handle.result();
    });
    expect(c.executed() || d.executed()).toBe(false);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((r) => [r.toolName, r.role === "toolResult" && r.isError, textOf(r)])).toEqual([
      ["a", false, "a done"],
      ["b", false, "b done"],
      ["c", true, SKIPPED_BY_STEERING],
      ["d", true, SKIPPED_BY_STEERING],
    ]);
    expect(result.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "toolResult",
      "toolResult",
      "toolResult",
      "user",
      "assistant",
    ]);
    expect(textOf(result.messages.at(-1))).toBe("ok: stop, do something else");
    expect(contexts[0].messages.at(-1)).toMatchObject({ role: "user", content: "stop, do something else" });
    expect(toolEventProblems(events)).toEqual([]);
    expect(eventTrace(events).slice(-9)).toEqual([
      "turn_end",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
  });

  it("rejects bad steering input without touching the run", async () => {
    const gate = gateTool("g");
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("g", {})], { stopReason: "toolUse" }),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [gate.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("steer-bad"),
      model: faux.getModel(),
      prompt: "go",
    });
    await worker.runUntil(async () => {
      await within(gate.entered.promise, 20000, "g");
      await expect(handle.steer("")).rejects.toThrow(RunUpdateRejectedError);
      await expect(handle.steer({ role: "assistant", content: [] } as never)).rejects.toThrow(RunUpdateRejectedError);
      expect((await handle.state()).queuedSteering).toBe(0);
      gate.release.resolve();
      return handle.result();
    });
    const history = await handle.workflow.fetchHistory();
    expect(history.events?.some((e) => e.workflowExecutionUpdateAcceptedEventAttributes)).toBe(false);
  });
});

describe("follow-ups", () => {
  it("runs another turn when a follow-up was queued while the model streamed", async () => {
    const faux = fauxModel(
      [
        fauxAssistantMessage("a long first answer ".repeat(20)),
        (context) => fauxAssistantMessage(`follow-up answered: ${lastUserText(context)}`),
      ],
      {
        tokensPerSecond: 200,
      },
    );
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("follow"),
      model: faux.getModel(),
      prompt: "first",
    });
    const result = await worker.runUntil(async () => {
      await eventSeen(events, (e) => e.type === "message_update");
      expect(await handle.followUp("and then this")).toEqual({ queued: 1 });
      return handle.result();
    });
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(textOf(result.messages[3])).toBe("follow-up answered: and then this");
    expect(result.turns).toBe(2);
    expect(events.filter((e) => e.type === "agent_end")).toHaveLength(1);
    const i = eventTrace(events).indexOf("turn_end");
    expect(eventTrace(events).slice(i, i + 4)).toEqual([
      "turn_end",
      "turn_start",
      "message_start:user",
      "message_end:user",
    ]);
  });
});

describe("tool approval", () => {
  function dangerous(extra: Partial<AgentTool> = {}) {
    let runs = 0;
    const tool: AgentTool = {
      name: "delete_all",
      description: "Deletes everything",
      parameters: Type.Object({ path: Type.String() }),
      requiresApproval: true,
      async execute(_id, args: any) {
        runs++;
        return { content: [{ type: "text", text: `deleted ${args.path}` }] };
      },
      ...extra,
    };
    return { tool, runs: () => runs };
  }
  const script = () => [
    fauxAssistantMessage([fauxToolCall("delete_all", { path: "/tmp/x" }, { id: "del-1" })], { stopReason: "toolUse" }),
    fauxAssistantMessage("finished"),
  ];

  async function startWaiting(tools: AgentTool[], extra: { approvalTimeout?: string } = {}, responses = script()) {
    const faux = fauxModel(responses);
    const setup = await testWorker(env, tools);
    const handle = await startAgentRun(env.client, {
      taskQueue: setup.taskQueue,
      workflowId: uniqueId("approve"),
      model: faux.getModel(),
      prompt: "clean up",
      ...extra,
    });
    const waiting = eventSeen(setup.events, (e) => e.type === "tool_execution_start" && e.toolName === "delete_all");
    return { ...setup, handle, waiting };
  }

  it("waits for approve(), showing the pending call in state()", async () => {
    const danger = dangerous();
    const { worker, handle, waiting } = await startWaiting([danger.tool]);
    const result = await worker.runUntil(async () => {
      await waiting;
      const state = await handle.state();
      expect(state.status).toBe("waiting_for_approval");
      expect(state.pendingApprovals).toEqual([
        {
          toolCallId: "del-1",
          toolName: "delete_all",
          args: { path: "/tmp/x" },
          since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        },
      ]);
      expect(danger.runs()).toBe(0);
      await expect(handle.approve("no-such-call")).rejects.toThrow(RunUpdateRejectedError);
      await handle.approve("del-1");
      return handle.result();
    });
    expect(danger.runs()).toBe(1);
    expect(textOf(result.messages[2])).toBe("deleted /tmp/x");
  });

  it("turns deny() into an error result with the reason, and the model goes on", async () => {
    const danger = dangerous();
    const { worker, handle, waiting } = await startWaiting([danger.tool]);
    const result = await worker.runUntil(async () => {
      await waiting;
      await handle.deny("del-1", "too risky");
      return handle.result();
    });
    expect(danger.runs()).toBe(0);
    expect(result.messages[2]).toMatchObject({ role: "toolResult", isError: true });
    expect(textOf(result.messages[2])).toBe("Tool call denied by the user: too risky");
    expect(result.stopReason).toBe("stop");
  });

  it("denies when the approval timeout passes", async () => {
    const danger = dangerous();
    const { worker, handle } = await startWaiting([danger.tool], { approvalTimeout: "1s" });
    const result = await worker.runUntil(handle.result());
    expect(danger.runs()).toBe(0);
    expect(textOf(result.messages[2])).toBe("Tool call denied: no approval within 1s.");
  });

  it("does not block the other parallel calls of the batch", async () => {
    const danger = dangerous();
    const safeExecuted = deferred();
    const safe: AgentTool = {
      name: "safe",
      description: "safe",
      parameters: Type.Object({}),
      async execute() {
        safeExecuted.resolve();
        return { content: [{ type: "text", text: "safe done" }] };
      },
    };
    const { worker, handle, waiting } = await startWaiting([danger.tool, safe], {}, [
      fauxAssistantMessage(
        [fauxToolCall("delete_all", { path: "/x" }, { id: "del-1" }), fauxToolCall("safe", {}, { id: "safe-1" })],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("finished"),
    ]);
    const result = await worker.runUntil(async () => {
      await waiting;
      // The safe call runs to its end while delete_all still waits for a person.
      await within(safeExecuted.promise, 10000, "the safe call to run before the decision");
      expect((await handle.state()).pendingApprovals.map((p) => p.toolCallId)).toEqual(["del-1"]);
      await handle.approve("del-1");
      return handle.result();
    });
    expect(result.messages.filter((m) => m.role === "toolResult").map((m) => textOf(m))).toEqual([
      "deleted /x",
      "safe done",
    ]);
  });

  it("asks only when the predicate says so", async () => {
    const danger = dangerous({ requiresApproval: (args: any) => args.path.startsWith("/etc") });
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/tmp/x" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("finished"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("predicate"),
      model: faux.getModel(),
      prompt: "clean",
    });
    const result = await worker.runUntil(handle.result());
    expect(danger.runs()).toBe(1);
    expect(textOf(result.messages[2])).toBe("deleted /tmp/x");
  });

  it("survives a worker restart while waiting", async () => {
    const danger = dangerous();
    const { worker, handle, waiting, taskQueue } = await startWaiting([danger.tool]);
    await worker.runUntil(waiting);
    // The first worker is gone; the wait lives in history and a new worker rebuilds it by replay.
    const second = await testWorker(env, [danger.tool], { taskQueue });
    const result = await second.worker.runUntil(async () => {
      expect((await handle.state()).pendingApprovals.map((p) => p.toolCallId)).toEqual(["del-1"]);
      await handle.approve("del-1");
      return handle.result();
    });
    expect(danger.runs()).toBe(1);
    expect(result.stopReason).toBe("stop");
  });
});

describe("sessions", () => {
  it("serves three prompts in one workflow, then closes", async () => {
    const faux = fauxModel(
      Array.from({ length: 3 }, () => (context: Context) => fauxAssistantMessage(`reply to ${lastUserText(context)}`)),
    );
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("session"),
      model: faux.getModel(),
      prompt: "one",
      session: true,
    });
    const result = await worker.runUntil(async () => {
      const two = await handle.prompt("two");
      expect(two.messages.map((m) => textOf(m))).toEqual(["two", "reply to two"]);
      expect(two.stopReason).toBe("stop");
      expect((await handle.state()).status).toBe("waiting_for_prompt");
      const three = await handle.prompt({ role: "user", content: "three", timestamp: 3 });
      expect(textOf(three.messages[1])).toBe("reply to three");
      await handle.close();
      return handle.result();
    });
    expect(result.messages.map((m) => textOf(m))).toEqual([
      "one",
      "reply to one",
      "two",
      "reply to two",
      "three",
      "reply to three",
    ]);
    expect(result.turns).toBe(3);
    expect(events.filter((e) => e.type === "agent_end")).toHaveLength(3);
  });

  it("ends on the idle timeout, and refuses prompts to a run that is not a session", async () => {
    const faux = fauxModel([fauxAssistantMessage("hi"), fauxAssistantMessage("hi")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const session = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("idle"),
      model: faux.getModel(),
      prompt: "hello",
      session: { idleTimeout: "1s" },
    });
    const plain = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("plain"),
      model: faux.getModel(),
      prompt: "hello",
      maxTurns: 1,
    });
    await worker.runUntil(async () => {
      expect((await session.result()).messages).toHaveLength(2);
      await plain.result();
      await expect(plain.prompt("more")).rejects.toThrow();
    });
  });
});

describe("cancellation", () => {
  async function cancelledRun(handle: AgentRunHandle, trigger: Promise<unknown>) {
    await trigger;
    const t0 = Date.now();
    await handle.cancel();
    const result = await handle.result();
    return { result, latencyMs: Date.now() - t0 };
  }

  // How fast a cancel takes effect (goal < 2 s) is measured by `npm run bench -- cancel` (bench/cancel.ts): a
  // verdict here must not depend on how busy the machine is. What happens is checked; the time is printed.
  it("aborts a streaming model mid-stream and keeps the partial message", async () => {
    const faux = fauxModel([fauxAssistantMessage("word ".repeat(3000))], { tokensPerSecond: 100 });
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cancel-stream"),
      model: faux.getModel(),
      prompt: "talk",
    });
    const { result, latencyMs } = await worker.runUntil(
      cancelledRun(
        handle,
        eventSeen(events, (e) => e.type === "message_update" && e.assistantEvent.type === "text_delta"),
      ),
    );
    console.log(`cancel → streaming model aborted and run ended: ${latencyMs} ms`);
    expect(result.stopReason).toBe("aborted");
    const last = result.messages.at(-1);
    expect(last).toMatchObject({ role: "assistant", stopReason: "aborted" });
    // Cut mid-stream: some of the 15,000 characters the model was streaming (over ~40 s), not all of them.
    expect(textOf(last).length).toBeGreaterThan(0);
    expect(textOf(last).length).toBeLessThan(15000);
    expect(events.at(-1)?.type).toBe("agent_end");
    expect((await handle.state()).status).toBe("cancelled");
  });

  it("aborts running tools while the worker runs, closes their calls, and abandons a tool that ignores its signal", async () => {
    const entered = deferred();
    const abortSeen = deferred();
    let abortedAfterMs: number | undefined;
    let cancelAt = 0;
    const listening: AgentTool = {
      name: "listening",
      description: "stops on abort",
      parameters: Type.Object({}),
      execute: (_id, _args, signal) =>
        new Promise((_, reject) => {
          entered.resolve();
          signal?.addEventListener("abort", () => {
            abortedAfterMs = Date.now() - cancelAt;
            abortSeen.resolve();
            reject(new Error("aborted"));
          });
        }),
    };
    const stubborn: AgentTool = {
      name: "stubborn",
      description: "ignores abort",
      parameters: Type.Object({}),
      cancelGracePeriodMs: 300,
      execute: () => new Promise(() => {}),
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("listening", {}, { id: "l1" }), fauxToolCall("stubborn", {}, { id: "s1" })], {
        stopReason: "toolUse",
      }),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [listening, stubborn]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cancel-tool"),
      model: faux.getModel(),
      prompt: "work",
    });
    const { result } = await worker.runUntil(async () => {
      const cancelled = await cancelledRun(
        handle,
        within(entered.promise, 20000, "the tool").then(() => (cancelAt = Date.now())),
      );
      // The abort must arrive through the heartbeat while this worker still runs, not from its shutdown: awaited
      // here, before runUntil stops the worker (the bound only keeps a broken cancel from hanging the test).
      await within(abortSeen.promise, 60_000, "the tool's abort signal while the worker runs");
      return cancelled;
    });
    expect(result.stopReason).toBe("aborted");
    expect(abortedAfterMs).toBeDefined();
    console.log(`cancel → running tool saw its AbortSignal: ${abortedAfterMs} ms`);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((r) => [r.role === "toolResult" && r.toolCallId, textOf(r)])).toEqual([
      ["l1", ABORTED_BY_CANCEL],
      ["s1", ABORTED_BY_CANCEL],
    ]);
    expect(events.at(-1)?.type).toBe("agent_end");
    expect(toolEventProblems(events)).toEqual([]);
  });
});
