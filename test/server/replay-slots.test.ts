/**
 * maxConcurrentReplays: the workflow task slot supplier that caps tasks from the shared queue (replays), pure; and
 * a worker built with it serving runs on the real dev server.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import type { SlotReserveContext } from "@temporalio/worker";
import { startAgentRun } from "../../src/client/client.js";
import { ReplayCappedSlots, replayCappedOptions } from "../../src/worker/replay-cap.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxModel, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();

const ctx = (isSticky: boolean): SlotReserveContext => ({
  slotType: "workflow",
  taskQueue: "q",
  workerIdentity: "w",
  workerBuildId: "",
  isSticky,
});

describe("ReplayCappedSlots", () => {
  it("caps shared-queue slots at maxReplays, never sticky ones below the total, and wakes waiters in order", async () => {
    const slots = new ReplayCappedSlots(4, 2);
    const never = new AbortController().signal;
    const a = await slots.reserveSlot(ctx(false), never);
    const b = await slots.reserveSlot(ctx(false), never);
    // A third replay waits; a sticky task does not.
    let third: unknown;
    const waiting = slots.reserveSlot(ctx(false), never).then((p) => (third = p));
    expect(slots.tryReserveSlot(ctx(false))).toBeNull();
    const s1 = await slots.reserveSlot(ctx(true), never);
    expect(slots.state).toEqual({ inUse: 3, replays: 2, waiting: 1 });
    // Full: a sticky task waits too, behind the replay that came first.
    const s2 = await slots.reserveSlot(ctx(true), never);
    let fourthSticky: unknown;
    const stickyWaiting = slots.reserveSlot(ctx(true), never).then((p) => (fourthSticky = p));
    // A sticky slot frees: the replay cannot have it (replays are full), the sticky waiter can.
    slots.releaseSlot({ permit: s1 });
    await stickyWaiting;
    expect(fourthSticky).toEqual({ sticky: true });
    expect(third).toBeUndefined();
    // A replay ends: the waiting replay goes.
    slots.releaseSlot({ permit: a });
    await waiting;
    expect(third).toEqual({ sticky: false });
    expect(slots.state).toEqual({ inUse: 4, replays: 2, waiting: 0 });
    for (const p of [b, s2, fourthSticky, third]) slots.releaseSlot({ permit: p as object });
    expect(slots.state).toEqual({ inUse: 0, replays: 0, waiting: 0 });
  });

  it("an aborted reservation leaves the queue and rejects with the signal's reason; bad sizes are refused", async () => {
    const slots = new ReplayCappedSlots(2, 1);
    const never = new AbortController().signal;
    await slots.reserveSlot(ctx(false), never);
    const abort = new AbortController();
    const waiting = slots.reserveSlot(ctx(false), abort.signal);
    expect(slots.state.waiting).toBe(1);
    const reason = new Error("poller gone");
    abort.abort(reason);
    await expect(waiting).rejects.toBe(reason);
    expect(slots.state).toEqual({ inUse: 1, replays: 1, waiting: 0 });
    // Given up before it ran: no permit is taken, even with room for one.
    const fresh = new ReplayCappedSlots(4, 2);
    await expect(fresh.reserveSlot(ctx(true), abort.signal)).rejects.toBe(reason);
    expect(fresh.state.inUse).toBe(0);
    expect(() => new ReplayCappedSlots(40, 0)).toThrow(RangeError);
    expect(() => new ReplayCappedSlots(40, 40)).toThrow(RangeError);
    expect(() => new ReplayCappedSlots(40, 2.5)).toThrow(RangeError);
    // The worker's own slot limits become the tuner's; a tuner of the caller's cannot be merged.
    const options = replayCappedOptions(
      { maxConcurrentWorkflowTaskExecutions: 8, maxConcurrentActivityTaskExecutions: 7 },
      3,
    );
    expect(options.maxConcurrentWorkflowTaskExecutions).toBeUndefined();
    const tuner = options.tuner as unknown as {
      workflowTaskSlotSupplier: ReplayCappedSlots;
      activityTaskSlotSupplier: unknown;
    };
    expect(tuner.workflowTaskSlotSupplier.slots).toBe(8);
    expect(tuner.workflowTaskSlotSupplier.maxReplays).toBe(3);
    expect(tuner.activityTaskSlotSupplier).toEqual({ type: "fixed-size", numSlots: 7 });
    expect(() => replayCappedOptions({ tuner: options.tuner }, 3)).toThrow(TypeError);
  });
});

describe("maxConcurrentReplays on a worker", () => {
  const tool: AgentTool = {
    name: "lookup",
    description: "looks a key up",
    parameters: Type.Object({ n: Type.Number() }),
    async execute(_id: string, args: any) {
      return { content: [{ type: "text" as const, text: `value ${args.n}` }] };
    },
  };
  /** Looks up 1..3, then answers with what it read: every result must reach the model. */
  const script = () =>
    Array.from({ length: 4 }, () => (context: Context) => {
      const results = context.messages.filter((m) => m.role === "toolResult").map(textOf);
      return results.length < 3
        ? fauxAssistantMessage([fauxToolCall("lookup", { n: results.length + 1 })], { stopReason: "toolUse" })
        : fauxAssistantMessage(results.join(", "));
    });

  it("serves runs whose every workflow task is a replay through one shared-queue slot", async () => {
    const models = Array.from({ length: 4 }, () => fauxModel(script()));
    // No workflow cache: no sticky queue, so every task comes from the shared queue and replays its run.
    const { worker, taskQueue } = await testWorker(env, [tool], {
      models: models.map((m) => m.getModel()),
      maxConcurrentReplays: 1,
      workerOptions: { maxConcurrentWorkflowTaskExecutions: 2, maxCachedWorkflows: 0 },
    });
    const answers = await worker.runUntil(async () => {
      const handles = await Promise.all(
        models.map((m) =>
          startAgentRun(env.client, { taskQueue, workflowId: uniqueId("replays"), model: m.getModel(), prompt: "go" }),
        ),
      );
      return Promise.all(handles.map(async (h) => textOf((await h.result()).messages.at(-1))));
    });
    expect(answers).toEqual(models.map(() => "value 1, value 2, value 3"));
  });

  it("is refused with a tuner of the caller's, or outside 1 .. slots - 1", async () => {
    const base = { connection: env.connection, taskQueue: uniqueId("tq"), workflowBundle: env.bundle };
    const tuner = replayCappedOptions({}, 2).tuner!;
    await expect(createAgentWorker({ ...base, maxConcurrentReplays: 2, workerOptions: { tuner } })).rejects.toThrow(
      TypeError,
    );
    await expect(
      createAgentWorker({
        ...base,
        maxConcurrentReplays: 8,
        workerOptions: { maxConcurrentWorkflowTaskExecutions: 8 },
      }),
    ).rejects.toThrow(RangeError);
  });
});
