/**
 * The schemas a run brings itself (issue #53, rows 1-3), on the real dev server, from the attacker's side: a
 * backtracking pattern in a client tool's result schema or a typed output held the worker's workflow thread or
 * event loop for minutes, and every other run on it; a run's `$ref` reached another run's schema. Decided from
 * what history recorded.
 */
import { describe, expect, it } from "@jest/globals";
import { WorkflowFailedError } from "@temporalio/client";
import { fauxAssistantMessage, fauxToolCall, type Context } from "@jai/ai";
import { startAgentRun, InvalidRunInputError } from "../../src/client/client.js";
import { AGENT_RUN_WORKFLOW } from "../../src/shared/definitions.js";
import { timestampMs } from "../../src/client/history-story.js";
import type { AgentRunResult } from "../../src/shared/contracts.js";
import {
  errorChain,
  fauxModel,
  stateWhen,
  testWorker,
  textOf,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();
const HOSTILE = "^(a|aa)+$";
const answer = (args: Record<string, unknown>, id: string) =>
  fauxAssistantMessage([fauxToolCall("final_answer", args, { id })], { stopReason: "toolUse" });

async function taskTroubles(workflowId: string): Promise<string[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter((e) => e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes)
    .map((e) => String(e.eventType));
}

describe("a run's own schemas", () => {
  it("a client result against a backtracking pattern is judged at once, no workflow task lost", async () => {
    const model = fauxModel([
      fauxAssistantMessage([fauxToolCall("code", {}, { id: "c-1" })], { stopReason: "toolUse" }),
      (context: Context) => fauxAssistantMessage(`got ${textOf(context.messages.at(-1))}`),
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const workflowId = uniqueId("hostile-result");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: model.getModel(),
      prompt: "ask",
      clientTools: [
        {
          name: "code",
          description: "a code",
          parameters: { type: "object" },
          result: { type: "string", pattern: HOSTILE },
        },
      ],
    });
    const result = await worker.runUntil(async () => {
      await stateWhen(handle, (s) => (s.pendingClientResults ?? []).length === 1, "the client call to wait");
      // 61 characters: the backtracking engine tried ~10^12 paths in the update validator, every attempt.
      await expect(handle.submitToolResult("c-1", "a".repeat(60) + "!")).rejects.toThrow(
        /must match \/\^\(a\|aa\)\+\$\//,
      );
      await handle.submitToolResult("c-1", "aaaa");
      return within(handle.result(), 30_000, "the run to end");
    });
    expect(textOf(result.messages.at(-1))).toBe("got aaaa");
    expect(await taskTroubles(workflowId)).toEqual([]);
  });

  it("a typed answer against a backtracking pattern is refused at once; the model's next answer ends the run", async () => {
    const model = fauxModel([
      answer({ value: "a".repeat(64) + "!" }, "fa-1"),
      (context: Context) => {
        expect(textOf(context.messages.at(-1))).toMatch(/must match pattern/);
        return answer({ value: "aaaa" }, "fa-2");
      },
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const workflowId = uniqueId("hostile-output");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: model.getModel(),
      prompt: "answer",
      output: { type: "string", pattern: HOSTILE } as never,
    });
    const result = await worker.runUntil(within(handle.result(), 30_000, "the run to end"));
    expect(result.output).toBe("aaaa");
    expect(await taskTroubles(workflowId)).toEqual([]);
  });

  it("while a costly answer is judged (and stopped at its deadline), other runs on the same worker go on", async () => {
    // uniqueItems over 20,000 objects: ~30 s of a core; on the worker's main thread it held every run for that long.
    const costly = Array.from({ length: 20_000 }, (_, i) => ({ a: i }));
    // Answers by what it was told, as a model does: on a busy machine the costly answer's call outlived its heartbeat
    // timeout once and was asked again (CI under two busy loops, 2026-12-06), and a script of answers in order then
    // gave the retry the next run's answer.
    const STOPPED = /was stopped: it took longer than 5 s/;
    const respond = (context: Context) =>
      STOPPED.test(textOf(context.messages.at(-1)))
        ? answer({ value: [1, 2] }, "fa-2")
        : answer({ value: costly }, "fa-1");
    const model = fauxModel(Array.from({ length: 8 }, () => respond));
    const others = fauxModel(Array.from({ length: 40 }, () => fauxAssistantMessage("hi")));
    const { worker, taskQueue } = await testWorker(env, []);
    const workflowId = uniqueId("costly-output");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: model.getModel(),
      prompt: "answer",
      output: { type: "array", uniqueItems: true } as never,
    });
    const events = async () => (await handle.workflow.fetchHistory()).events ?? [];
    const modelDone = (e: Awaited<ReturnType<typeof events>>[number]) => !!e.activityTaskCompletedEventAttributes;
    const checked = (e: Awaited<ReturnType<typeof events>>[number]) => !!e.markerRecordedEventAttributes;
    // The check's verdict: the first marker (a local activity's) after the model's answer (the setup's is before).
    const verdictOf = (h: Awaited<ReturnType<typeof events>>) => h.slice(h.findIndex(modelDone) + 1).find(checked);
    const done: number[] = [];
    const result = await worker.runUntil(async () => {
      await within(
        (async () => {
          while (!(await events()).some(modelDone)) await new Promise((r) => setTimeout(r, 50));
        })(),
        // A bound against a hang: on a slow machine the answer took past 30 s to be recorded (CI, 2026-12-06).
        180_000,
        "the costly answer to arrive",
      );
      // Other runs, one after another, until the costly check's verdict is recorded.
      for (let i = 0; i < 40 && !verdictOf(await events()); i++) {
        const other = await startAgentRun(env.client, {
          taskQueue,
          workflowId: uniqueId("other"),
          model: others.getModel(),
          prompt: "hi",
        });
        await within(other.result(), 180_000, "another run to end"); // a bound against a hang
        // Each workflow task it completed is work the same worker did: its times are what the window is judged by.
        for (const e of (await other.workflow.fetchHistory()).events ?? [])
          if (e.workflowTaskCompletedEventAttributes) done.push(timestampMs(e.eventTime));
      }
      return within(handle.result(), 180_000, "the costly run to end");
    });
    // The costly check was stopped at its deadline and the model told so.
    expect(result.messages.some((m) => m.role === "toolResult" && STOPPED.test(textOf(m)))).toBe(true);
    // From what the server recorded: the worker completed another run's workflow task between the costly answer's
    // arrival and its verdict (a held event loop or workflow thread completes none).
    const history = await events();
    const arrived = history.find(modelDone)!.eventTime!;
    const verdict = verdictOf(history)!;
    const during = done.filter((t) => t > timestampMs(arrived) && t < timestampMs(verdict.eventTime));
    expect(during.length).toBeGreaterThan(0);
    expect(result.output).toEqual([1, 2]);
    expect(await taskTroubles(workflowId)).toEqual([]);
  }, 600_000);

  it("a run's $id is its own and a $ref to another run's schema is refused, by the client and by the run", async () => {
    const { worker, taskQueue } = await testWorker(env, []);
    const weatherA = { type: "object", $id: "Weather", properties: { city: { type: "string" } }, required: ["city"] };
    const weatherB = { type: "object", $id: "Weather", properties: { tempC: { type: "number" } }, required: ["tempC"] };
    const run = async (schema: Record<string, unknown>, args: Record<string, unknown>) => {
      const model = fauxModel([answer(args, "fa")]);
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("weather"),
        model: model.getModel(),
        prompt: "weather",
        output: schema as never,
        outputRetries: 0,
      });
      return (await within(handle.workflow.result(), 30_000, "the run to end")) as AgentRunResult;
    };
    const stealer = { type: "object", properties: { w: { $ref: "Weather" } }, required: ["w"] };
    const [a, b, raw] = await worker.runUntil(async () => {
      const a = await run(weatherA, { city: "Oslo" });
      // Before: a shared validator refused B's schema ("already exists") and the run ended "schema unusable".
      const b = await run(weatherB, { tempC: 3 });
      const refused = env.client.workflow
        .start(AGENT_RUN_WORKFLOW, {
          taskQueue,
          workflowId: uniqueId("raw-ref"),
          args: [{ model: "faux/x", prompt: "hi", output: stealer }],
        })
        .then((h) => within(h.result(), 30_000, "the raw run to fail"))
        .catch((e: unknown) => e);
      return [a, b, await refused] as const;
    });
    expect(a).toMatchObject({ stopReason: "stop", output: { city: "Oslo" } });
    expect(b).toMatchObject({ stopReason: "stop", output: { tempC: 3 } });
    expect(raw).toBeInstanceOf(WorkflowFailedError);
    expect(errorChain(raw)).toMatch(/Invalid run input: "output.properties.w.\$ref" must be a local reference/);
    await expect(
      startAgentRun(env.client, { taskQueue, model: "faux/x", prompt: "hi", output: stealer as never }),
    ).rejects.toThrow(InvalidRunInputError);
  });
});
