/**
 * A run's patch markers since baseline v4 (src/workflows/patches.ts), on the real dev server: one, before the run's
 * first command, whatever later feature the run uses; and runs queried while their setup (a local activity) outlasts
 * a workflow task's heartbeat replay. Before v4 the client tools' patch was asked right after the setup: a query
 * answered while the setup's result was pending completed the task with the setup's marker alone, the patch's marker
 * went into the next task, and the history failed to replay ("Non-deprecated patch marker encountered").
 */
import { describe, expect, it } from "@jest/globals";
import { Worker } from "@temporalio/worker";
import type { ActivityInterceptorsFactory } from "@temporalio/worker";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentTool, ClientToolDeclaration } from "../../src/shared/contracts.js";
import { stateQuery } from "../../src/shared/definitions.js";
import { BASELINE_PATCH, RUN_SCHEMAS_PATCH } from "../../src/workflows/patches.js";
import {
  errorChain,
  fauxModel,
  patchIds,
  stateWhen,
  testWorker,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();

const pickColor: ClientToolDeclaration = {
  name: "pick_color",
  description: "Asks the user to pick a color",
  parameters: { type: "object", properties: { hint: { type: "string" } } },
};
const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
const lookup: AgentTool = {
  name: "lookup",
  description: "lookup",
  parameters: Type.Object({}),
  fast: true,
  execute: async () => text("looked up"),
};
const read: AgentTool = {
  name: "read",
  description: "read",
  parameters: Type.Object({}),
  execute: async () => text("read"),
};

type HistoryEvents = NonNullable<Awaited<ReturnType<AgentRunHandle["workflow"]["fetchHistory"]>>["events"]>;

/**
 * A query that got no answer: the server was busy (the queries are the load that provokes the split, and a busy
 * machine answers some late), or it refused while the run's workflow task is retried after timing out on a busy
 * machine ("Workflow Task in failed state"). Load, not a verdict on the run: the histories' replay is that. Any other
 * failure of a query is one.
 */
const unanswered = (err: unknown) =>
  /deadline[ _]exceeded|timed? ?out|timeout|workflow task in failed state/i.test(errorChain(err));

/** Whether a workflow task completed between the setup's local-activity marker and the next event (a split). */
function setupSplit(events: HistoryEvents): boolean {
  const at = events.findIndex((e) => e.markerRecordedEventAttributes?.markerName === "core_local_activity");
  return at >= 0 && !!events[at + 1]?.workflowTaskScheduledEventAttributes;
}

describe("patch markers", () => {
  it("a run started now records one, the baseline, before its first command, whatever later features it uses", async () => {
    const faux = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("lookup", {}, { id: "l1" }),
          fauxToolCall("read", {}, { id: "r1" }),
          fauxToolCall("pick_color", { hint: "warm" }, { id: "c1" }),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [lookup, read]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("one-patch"),
      model: faux.getModel(),
      prompt: "go",
      budget: { maxToolCalls: 10 },
      approvalPolicy: { rules: [{ match: "read", action: "ask" }] },
      clientTools: [pickColor],
    });
    await worker.runUntil(async () => {
      await stateWhen(handle, (s) => s.pendingApprovals.some((a) => a.toolCallId === "r1"), "r1 to ask");
      await handle.approve("r1");
      await stateWhen(
        handle,
        (s) => (s.pendingClientResults ?? []).some((p) => p.toolCallId === "c1"),
        "c1 to wait for the client",
      );
      await handle.submitToolResult("c1", { color: "red" });
      return within(handle.result(), 30_000, "the run");
    });
    const events = (await handle.workflow.fetchHistory()).events ?? [];
    // Recorded before v4, the same run asked five: budget, baseline v3, client tools, approval policy, client wait
    // (and now the check of its schemas, a change made after v4).
    expect(patchIds(events)).toEqual([BASELINE_PATCH, RUN_SCHEMAS_PATCH]);
    // The first command of the first workflow task (events 1-4: started, task scheduled, started, completed).
    expect(events[4]?.markerRecordedEventAttributes?.markerName).toBe("core_patch");
  });

  it("runs queried while their setup outlasts a workflow task's heartbeat replay", async () => {
    // The worker completes a task early (a heartbeat) at 80 % of the task timeout while a local activity runs.
    // Setups that end around that moment, under queries every 5 ms, are what split the old histories. The queries
    // stop once a run is past its setup (nothing later can split it), so the load they make is the setup's alone.
    const runs = 16;
    const delays = new Map<string, number>();
    // Only a run's first three setups are held: on a machine starved enough that every held setup outlasts the 3 s
    // task timeout, each lost task ran the held setup again, and runs retried past the 240 s bound (CI beside two
    // busy loops, 2026-12-06). The splits this test provokes happen at those first attempts.
    const held = new Map<string, number>();
    const slowSetup: ActivityInterceptorsFactory = (ctx) => ({
      inbound: {
        async execute(input, next) {
          const id = ctx.info.workflowExecution?.workflowId ?? "";
          const delay = delays.get(id);
          if (ctx.info.activityType === "resolveRunSetup" && delay) {
            held.set(id, (held.get(id) ?? 0) + 1);
            if (held.get(id)! <= 3) await new Promise((r) => setTimeout(r, delay));
          }
          return next(input);
        },
      },
    });
    const faux = fauxModel(Array.from({ length: runs }, () => fauxAssistantMessage("done")));
    const { worker, taskQueue } = await testWorker(env, [], {
      workerOptions: { interceptors: { activity: [slowSetup] } },
    });
    const outcomes = await worker.runUntil(
      Promise.all(
        Array.from({ length: runs }, async (_, i) => {
          const workflowId = uniqueId("queried-setup");
          delays.set(workflowId, 2350 + i * 25);
          const handle = await startAgentRun(env.client, {
            taskQueue,
            workflowId,
            model: faux.getModel(),
            prompt: "go",
            clientTools: [pickColor],
            workflowTaskTimeout: "3s",
          });
          let ended = false;
          // A bound against a hang only: on a machine busy enough to take a task past its 3 s timeout, the
          // setup runs again on the next attempt, and a run may take many attempts to get through.
          const result = within(handle.result(), 240_000, "the run").finally(() => (ended = true));
          const problems: string[] = [];
          const queries = { answered: 0, late: 0 };
          let starting = true;
          while (!ended && starting) {
            await handle.workflow.query(stateQuery).then(
              (state) => {
                queries.answered++;
                starting = state.phase === "starting";
              },
              (err: unknown) => (unanswered(err) ? queries.late++ : problems.push(`query: ${errorChain(err)}`)),
            );
            await new Promise((r) => setTimeout(r, 5));
          }
          await result;
          const history = await handle.workflow.fetchHistory();
          await Worker.runReplayHistory({ workflowBundle: env.bundle }, history, workflowId).catch((err: unknown) =>
            problems.push(`replay: ${String(err)}`),
          );
          return { split: setupSplit(history.events ?? []), problems: [...new Set(problems)], queries };
        }),
      ),
    );
    // How many ran into the split, and how many queries a busy server answered too late, is timing: printed, not
    // asserted (one in eight split on a quiet machine). The verdict is the histories': each replays.
    const late = outcomes.reduce((n, o) => n + o.queries.late, 0);
    const answered = outcomes.reduce((n, o) => n + o.queries.answered, 0);
    console.log(
      `setups split from their run's next command: ${outcomes.filter((o) => o.split).length} of ${runs}; queries answered ${answered}, too late ${late}`,
    );
    expect(outcomes.flatMap((o) => o.problems)).toEqual([]);
    expect(answered).toBeGreaterThan(0);
  }, 300_000);
});
