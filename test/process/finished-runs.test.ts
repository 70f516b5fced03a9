/**
 * Finished runs answer from history alone (issue 9, row 6): state(), transcript()
 * and result() over the whole continue-as-new chain with no worker running,
 * equal to what the queries answered while a worker was up.
 */
import { describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { chainTranscript, getAgentRun, startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import { closedRunView } from "../../src/client/history-view.js";
import type { AgentMessage, AgentRunState, AgentTool } from "../../src/shared/contracts.js";
import { stateQuery } from "../../src/shared/definitions.js";
import { contextMismatches, SeenContexts } from "../support/context-check.js";
import { fauxModel, gateTool, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const env = withServer();

/** A tool whose result carries `detailBytes` of details (transcript only: the model's context stays small). */
function pageTool(detailBytes: number, textBytes = 10): AgentTool {
  return {
    name: "page",
    description: "a page",
    parameters: Type.Object({ n: Type.Number() }),
    async execute(_id, args: any) {
      return {
        content: [{ type: "text", text: `${args.n}:${"y".repeat(textBytes)}` }],
        details: { blob: "d".repeat(detailBytes) },
      };
    },
  };
}

/** Calls the page tool until `turns` results are in, then answers. */
function looping(turns: number) {
  return Array.from({ length: turns + 1 }, () => (context: Context) => {
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    return done < turns
      ? fauxAssistantMessage([fauxToolCall("page", { n: done + 1 }, { id: `c${done + 1}` })], { stopReason: "toolUse" })
      : fauxAssistantMessage(`read ${done} pages`);
  });
}

/** What the queries answer for a finished run while its worker is still up. */
async function liveAnswers(handle: AgentRunHandle): Promise<{ state: AgentRunState; transcript: AgentMessage[] }> {
  const state = await handle.workflow.query(stateQuery);
  return { state, transcript: await chainTranscript(env.client, handle.workflowId, undefined, 0) };
}

/** state() and transcript() of a finished run with no worker anywhere; a hang fails the test. */
async function fromHistory(workflowId: string) {
  const handle = getAgentRun(env.client, workflowId);
  const started = performance.now();
  const state = await within(handle.state(), 120_000, "state() of a finished run");
  const transcript = await within(handle.transcript(), 120_000, "transcript() of a finished run");
  const ms = performance.now() - started;
  const result = await within(handle.result(), 120_000, "result() of a finished run");
  return { state, transcript, result, ms };
}

function expectSameState(fromHistory: AgentRunState, live: AgentRunState): void {
  // Steering or follow-ups a run never took up stay counted by the live query; none are left in these runs.
  expect(fromHistory).toEqual(JSON.parse(JSON.stringify(live)));
}

// Each test's bound is against a hang only (600 s): the five run side by side with the rest of the suite, and on a
// 2-core machine with two busy loops the 4-turn chain took past 60 s. The verdicts are the answers' equality.
describe("finished runs answer from history alone", () => {
  it.concurrent(
    "a run that continued as new after every turn: state, transcript and result with no worker",
    async () => {
      const faux = fauxModel(looping(4));
      const { worker, taskQueue } = await testWorker(env, [pageTool(100)]);
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("chain"),
        model: faux.getModel(),
        prompt: "read 4 pages",
        continueAsNew: { afterTurns: 1 },
      });
      const live = await worker.runUntil(async () => (await handle.result(), liveAnswers(handle)));
      expect(live.state.earlierMessages).toBeGreaterThan(0); // it did continue as new
      const seen = await fromHistory(handle.workflowId);
      expect(seen.transcript).toEqual(live.transcript);
      expect(seen.transcript).toHaveLength(10);
      expectSameState(seen.state, live.state);
      expect(seen.result.stopReason).toBe("stop");
    },
    600000,
  );

  it.concurrent(
    "a continued chain whose result and carries left messages out is rebuilt run by run",
    async () => {
      // 12 turns of ~200 KB results: the result keeps only the last message, each carry only the newest ~400 KB.
      const faux = fauxModel(looping(12));
      const { worker, taskQueue } = await testWorker(env, [pageTool(200_000)], {});
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("chain-omitted"),
        model: faux.getModel(),
        prompt: "read 12 pages",
        continueAsNew: { afterTurns: 1 },
        toolResultLimits: { maxDetailsBytes: 300_000 },
      });
      const live = await worker.runUntil(async () => (await handle.result(), liveAnswers(handle)));
      const seen = await fromHistory(handle.workflowId);
      expect(seen.result.messagesOmitted).toBeGreaterThan(0);
      expect(seen.transcript).toHaveLength(26);
      expect(seen.transcript).toEqual(live.transcript);
      expectSameState(seen.state, live.state);
      const view = await closedRunView(env.client, handle.workflowId);
      expect(view.exact).toBe(true);
      expect(view.runs.length).toBeGreaterThan(2); // it walked back through earlier runs
    },
    600000,
  );

  it.concurrent(
    "a run whose result left messages out, with steering, a loop-made tool result and a compaction",
    async () => {
      const { tool: slow, entered: steered, release } = gateTool("slow");
      const faux = fauxModel([
        fauxAssistantMessage([fauxToolCall("slow", {}, { id: "s1" }), fauxToolCall("nope", {}, { id: "n1" })], {
          stopReason: "toolUse",
        }),
        fauxAssistantMessage(
          Array.from({ length: 40 }, (_, n) => fauxToolCall("page", { n }, { id: `p${n}` })),
          { stopReason: "toolUse" },
        ),
        fauxAssistantMessage("read 40 pages"),
      ]);
      // 40 results of 48 KB: 1.9 MB, over the result budget and the model's context (compacted before the last call).
      const { worker, taskQueue } = await testWorker(env, [slow, pageTool(10, 48 * 1024)]);
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("omitted"),
        model: faux.getModel(),
        prompt: "go",
      });
      const live = await worker.runUntil(async () => {
        await steered.promise;
        await handle.steer("also read 40 pages");
        release.resolve();
        await handle.result();
        return liveAnswers(handle);
      });
      const seen = await fromHistory(handle.workflowId);
      expect(seen.result.messagesOmitted).toBeGreaterThan(0);
      expect(live.transcript.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "assistant",
        ...Array(40).fill("toolResult"),
        "assistant",
      ]);
      expect(textOf(live.transcript[3])).toBe("Tool nope not found");
      expect(seen.transcript).toEqual(live.transcript);
      expectSameState(seen.state, live.state);
    },
    600000,
  );

  // Two 150 KB steers arrive while the first batch runs (one tool that waits, one unknown: a loop-made result).
  // The next call's new messages (~300 KB) are over the inline budget, and the carry after turn 2 keeps only
  // the newest ~256 KB: that run's part of the transcript is rebuilt from its history. After turn 1 the steers
  // are still queued at continue-as-new: the next run's input carries them.
  it.each([
    [2, "sent by updates of the run"],
    [1, "carried into the next run"],
  ])(
    "steering too big to ride along in a model call's input, left out of the carry: rebuilt exactly from history (afterTurns %i: %s)",
    async (afterTurns) => {
      const { tool: slow, entered: steered, release } = gateTool("slow");
      const seen = new SeenContexts();
      const faux = fauxModel(
        seen.wrap([
          fauxAssistantMessage([fauxToolCall("slow", {}, { id: "s1" }), fauxToolCall("nope", {}, { id: "n1" })], {
            stopReason: "toolUse",
          }),
          fauxAssistantMessage([fauxToolCall("page", { n: 1 }, { id: "p1" })], { stopReason: "toolUse" }),
          fauxAssistantMessage("done"),
        ]),
      );
      const { worker, taskQueue } = await testWorker(env, [slow, pageTool(10)]);
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("big-steer"),
        model: faux.getModel(),
        prompt: "go",
        continueAsNew: { afterTurns },
      });
      const live = await worker.runUntil(async () => {
        await steered.promise;
        await handle.steer("漢".repeat(50_000));
        await handle.steer("é".repeat(75_000));
        release.resolve();
        await handle.result();
        return liveAnswers(handle);
      });
      expect(live.transcript.map((m) => m.role)).toEqual([
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
        "user",
        "assistant",
        "toolResult",
        "assistant",
      ]);
      const view = await closedRunView(env.client, handle.workflowId);
      expect(view.runs.length).toBeGreaterThanOrEqual(2); // an earlier run's history was read
      expect(view.exact).toBe(true);
      expect(view.transcript).toEqual(live.transcript);
      expect(contextMismatches(seen.calls, view.transcript)).toEqual([]);
    },
    600000,
  );

  it.concurrent(
    "npm run show prints every run of a continued chain",
    async () => {
      const faux = fauxModel(looping(3));
      const { worker, taskQueue } = await testWorker(env, [pageTool(100)]);
      const workflowId = uniqueId("show-chain");
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId,
        model: faux.getModel(),
        prompt: "read 3 pages",
        continueAsNew: { afterTurns: 1 },
      });
      await worker.runUntil(handle.result());
      const show = spawnSync(process.execPath, [...nodeEntry(path.join(root, "src/cli/show.ts")), workflowId], {
        cwd: root,
        env: { ...process.env, NODE_OPTIONS: "" },
        encoding: "utf8",
        timeout: 60000,
      });
      expect(show.stderr).toBe("");
      expect(show.status).toBe(0);
      expect(show.stdout).toContain("user: read 3 pages");
      for (const id of ["c1", "c2", "c3"]) expect(show.stdout).toContain(`✓ page (${id})`);
      expect(show.stdout).toContain("read 3 pages");
      expect(show.stdout.match(/^── run \S+/gm)).toHaveLength(4);
      expect(show.stdout).toContain("result: stop after 4 turns");
    },
    600000,
  );

  it.concurrent(
    "a 60-turn chain answers state() and transcript() from history (timing printed)",
    async () => {
      const faux = fauxModel(looping(60));
      const { worker, taskQueue } = await testWorker(env, [pageTool(8_000)]);
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("chain60"),
        model: faux.getModel(),
        prompt: "read 60 pages",
        maxTurns: 100,
        continueAsNew: { afterTurns: 1 },
      });
      const live = await worker.runUntil(async () => (await handle.result(), liveAnswers(handle)));
      const seen = await fromHistory(handle.workflowId);
      console.log(
        `60-turn chain (61 runs, ${seen.transcript.length} messages, result omitted ${seen.result.messagesOmitted ?? 0}): state()+transcript() from history in ${seen.ms.toFixed(0)} ms`,
      );
      expect(seen.transcript).toEqual(live.transcript);
      expectSameState(seen.state, live.state);
    },
    600000,
  );
});
