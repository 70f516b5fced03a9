/**
 * Fast tools (AgentTool.fast) run as local activities: no task-queue round
 * trip, the result recorded as a marker; the setup is a local activity too.
 * Transcripts rebuilt from history and model calls by reference still work.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { chainTranscript, getAgentRun, startAgentRun } from "../../src/client/client.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { LOCAL_ACTIVITIES_PATCH } from "../../src/workflows/patches.js";
import { fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

function lookupTool(extra: Partial<AgentTool> = {}): AgentTool & { calls: number } {
  const tool = {
    name: "lookup",
    description: "looks a key up",
    parameters: Type.Object({ n: Type.Number() }),
    fast: true,
    calls: 0,
    async execute(_id: string, args: any) {
      tool.calls++;
      return { content: [{ type: "text" as const, text: `value ${args.n}` }] };
    },
    ...extra,
  };
  return tool;
}

/** Calls lookup until `turns` results are in (answering from the context: every result must reach the model), then answers. */
function looping(turns: number) {
  return Array.from({ length: turns + 1 }, () => (context: Context) => {
    const results = context.messages.filter((m) => m.role === "toolResult");
    results.forEach((r, i) => {
      if (textOf(r) !== `value ${i + 1}`) throw new Error(`the model saw result ${i + 1} as ${textOf(r)}`);
    });
    const done = results.length;
    return done < turns
      ? fauxAssistantMessage([fauxToolCall("lookup", { n: done + 1 }, { id: `c${done + 1}` })], {
          stopReason: "toolUse",
        })
      : fauxAssistantMessage(`looked up ${done}`);
  });
}

const localActivityTypes = (events: { markerRecordedEventAttributes?: any }[]) =>
  events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    if (m?.markerName !== "core_local_activity") return [];
    return [JSON.parse(Buffer.from(m.details.data.payloads[0].data).toString()).activity_type as string];
  });

describe("fast tools", () => {
  it("run as local activities: markers instead of activity tasks, 7 events per tool turn, the setup local too", async () => {
    const tool = lookupTool();
    const turns = 5;
    const faux = fauxModel(looping(turns));
    const { worker, taskQueue } = await testWorker(env, [tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fast"),
      model: faux.getModel(),
      prompt: "look up",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe(`looked up ${turns}`);
    expect(tool.calls).toBe(turns);
    const events = (await handle.workflow.fetchHistory()).events ?? [];
    const scheduled = events.flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : [],
    );
    expect(scheduled).toEqual(Array(turns + 1).fill("streamAssistantMessage"));
    expect(localActivityTypes(events)).toEqual(["resolveRunSetup", ...Array(turns).fill("executeFastTool")]);
    const modelCalls = events.flatMap((e, i) => (e.activityTaskScheduledEventAttributes ? [i] : []));
    const perTurn = modelCalls.slice(1).map((at, i) => at - modelCalls[i]);
    expect(Math.max(...perTurn)).toBeLessThanOrEqual(8);
  });

  it("a transcript rebuilt from history (continued as new every turn) equals the live one", async () => {
    const faux = fauxModel(looping(3));
    const { worker, taskQueue } = await testWorker(env, [lookupTool()]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fast-chain"),
      model: faux.getModel(),
      prompt: "look up",
      continueAsNew: { afterTurns: 1 },
    });
    const live = await worker.runUntil(
      async () => (await handle.result(), chainTranscript(env.client, handle.workflowId, undefined, 0)),
    );
    const seen = await within(
      getAgentRun(env.client, handle.workflowId).transcript(),
      30000,
      "transcript from history",
    );
    expect(seen).toEqual(live);
    expect(seen.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
      "toolResult",
      "assistant",
    ]);
  });

  it("a fast tool that is not idempotent stays a regular activity", async () => {
    const faux = fauxModel(looping(1));
    const { worker, taskQueue } = await testWorker(env, [lookupTool({ idempotent: false })]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fast-once"),
      model: faux.getModel(),
      prompt: "look up",
    });
    await worker.runUntil(handle.result());
    const events = (await handle.workflow.fetchHistory()).events ?? [];
    expect(events).toContainEqual(
      expect.objectContaining({
        activityTaskScheduledEventAttributes: expect.objectContaining({
          activityType: expect.objectContaining({ name: "executeTool" }),
        }),
      }),
    );
    expect(localActivityTypes(events)).toEqual(["resolveRunSetup"]);
  });

  it("runs recorded before the patch keep regular activities; new runs record the patch once", async () => {
    const faux = fauxModel(looping(2));
    const { worker, taskQueue } = await testWorker(env, [lookupTool()]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fast-patch"),
      model: faux.getModel(),
      prompt: "look up",
    });
    await worker.runUntil(handle.result());
    const events = (await handle.workflow.fetchHistory()).events ?? [];
    const patches = events.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === "core_patch" &&
        JSON.stringify(e).includes(Buffer.from(`"${LOCAL_ACTIVITIES_PATCH}"`).toString("base64").slice(0, 12)),
    );
    expect(patches.length).toBeLessThanOrEqual(1);
  });
});
