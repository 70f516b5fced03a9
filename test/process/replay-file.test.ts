/**
 * Replay debugging as a person does it (issue 55, docs/replay.md): a run's history exported with the real
 * `temporal workflow show --output json`, replayed by `npm run replay -- --file` in a child process. A run that
 * started a sub-agent and continued as new replays under the workflow id its history gives, run by run; a wrong
 * `--workflow-id` or a changed loop is one line naming the event that diverged; a history that needs its id and
 * does not say it names `--workflow-id`. And a finished run reset to an earlier turn with `temporal workflow
 * reset` completes again with the same transcript.
 */
import { describe, expect, it } from "@jest/globals";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { findTemporalCli } from "../../src/node/dev-server.js";
import { agentTool } from "../../src/worker/subagents/agent-tool.js";
import type { AgentMessage, AgentRunResult, AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";
import { runProgram } from "../support/cli.js";

const env = withServer();
const dir = mkdtempSync(path.join(os.tmpdir(), "replay-file-"));
const temporal = findTemporalCli({ allowBuild: false });
if (!temporal) throw new Error("the Temporal CLI is needed (npm run ensure-temporal)");

/** The real Temporal CLI against the test server (TEMPORAL_ADDRESS, as a person's shell would set it). */
const temporalCli = (args: string[]) => runProgram(temporal, args, { TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS });

/** `npm run replay -- <args>` as a person runs it: a process of its own. */
const replay = (args: string[]) => runProgram(process.execPath, [...nodeEntry("src/cli/replay.ts"), ...args]);

/** A run's history exported exactly as `temporal workflow show --output json` prints it, into a file. */
async function exportHistory(workflowId: string, runId: string | undefined, name: string): Promise<string> {
  const out = await temporalCli([
    "workflow",
    "show",
    "--workflow-id",
    workflowId,
    ...(runId ? ["--run-id", runId] : []),
    "--output",
    "json",
  ]);
  expect(out.stderr).toBe("");
  expect(out.code).toBe(0);
  const file = path.join(dir, name);
  writeFileSync(file, out.stdout);
  return file;
}

type FileEvent = { eventId: string; [attributes: string]: unknown };
const eventsOf = (file: string): FileEvent[] =>
  (JSON.parse(readFileSync(file, "utf8")) as { events: FileEvent[] }).events;

/** The events the first workflow task's commands recorded begin right after its WorkflowTaskCompleted. */
function firstCommandEvent(events: FileEvent[]): FileEvent {
  const completed = events.findIndex((e) => e.workflowTaskCompletedEventAttributes);
  return events[completed + 1];
}

/** One line on stderr, no stack trace. */
function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split("\n");
  expect(lines).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
  return lines[0];
}

describe("npm run replay --file: a history as `temporal workflow show --output json` gives it", () => {
  // Turn 1 asks the researcher sub-agent, the run continues as new, turn 2 answers: a sub-agent tree and a chain.
  let recording: ReturnType<typeof record> | undefined;
  const recorded = () => (recording ??= record());
  const record = async () => {
    const child = fauxModel([(context: Context) => fauxAssistantMessage(`notes on ${textOf(context.messages[0])}`)]);
    const researcher = agentTool({
      name: "researcher",
      description: "Researches a topic",
      model: child.getModel(),
      systemPrompt: "You research.",
      maxTurns: 2,
    });
    const parent = fauxModel([
      fauxAssistantMessage([fauxToolCall("researcher", { prompt: "tides" }, { id: "r1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("Tides follow the moon."),
    ]);
    const { worker, taskQueue } = await testWorker(env, [researcher]);
    const workflowId = uniqueId("replay-file");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: parent.getModel(),
      prompt: "Why are there tides?",
      tools: ["researcher"],
      continueAsNew: { afterTurns: 1 },
    });
    const result = await worker.runUntil(handle.result());
    const firstRunId = (await handle.workflow.describe()).raw.workflowExecutionInfo?.firstRunId ?? undefined;
    return {
      workflowId,
      result,
      first: await exportHistory(workflowId, firstRunId, "first-run.json"),
      last: await exportHistory(workflowId, undefined, "last-run.json"),
    };
  };

  it("the run that started the sub-agent replays with its id read from the file; so does the run it continued as", async () => {
    const { workflowId, result, first, last } = await recorded();
    expect(result.stopReason).toBe("stop");
    const events = eventsOf(first);
    const start = events.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    expect((start?.startChildWorkflowExecutionInitiatedEventAttributes as { workflowId: string }).workflowId).toBe(
      `${workflowId}/sub-1-0`,
    );
    expect(events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeDefined();
    expect(eventsOf(last)[0].workflowExecutionStartedEventAttributes).toHaveProperty("continuedExecutionRunId");
    const [ok, okLast] = await Promise.all([replay(["--file", first]), replay(["--file", last])]);
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toBe(`replayed ${events.length} events: deterministic\n`);
    expect(ok.code).toBe(0);
    expect(okLast.stderr).toBe("");
    expect(okLast.stdout).toMatch(/^replayed \d+ events: deterministic\n$/);
    expect(okLast.code).toBe(0);
  }, 180_000);

  it("a wrong --workflow-id: one line naming the sub-agent start that diverged, exit 1", async () => {
    const { workflowId, first } = await recorded();
    const out = await replay(["--file", first, "--workflow-id", "someone-else"]);
    expect(out.code).toBe(1);
    const start = eventsOf(first).find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)!;
    const line = oneLine(out.stderr);
    expect(line).toContain(
      `diverged at event ${start.eventId} (startChildWorkflowExecutionInitiated) (nondeterminism): `,
    );
    expect(line).toContain(`'${workflowId}/sub-1-0'`);
    expect(line).toContain(`'someone-else/sub-1-0'`);
    expect(line).toContain(`says "${workflowId}"`);
  }, 120_000);

  it("a changed loop: one line naming the first command of the first workflow task, exit 1", async () => {
    const { first } = await recorded();
    const out = await replay(["--file", first, "--workflows", "test/fixtures/changed-workflow.ts"]);
    expect(out.code).toBe(1);
    // The changed loop schedules its audit activity where the run recorded its first command (a patch marker).
    const at = firstCommandEvent(eventsOf(first));
    expect(at.markerRecordedEventAttributes).toBeDefined();
    expect(oneLine(out.stderr)).toMatch(
      new RegExp(
        `^replay of \\d+ events diverged at event ${at.eventId} \\(markerRecorded\\) \\(nondeterminism\\): \\S`,
      ),
    );
  }, 120_000);

  it("a history that does not say its id while its sub-agents need it names --workflow-id, exit 2", async () => {
    const { first } = await recorded();
    const json = JSON.parse(readFileSync(first, "utf8")) as { events: Record<string, Record<string, unknown>>[] };
    delete json.events[0].workflowExecutionStartedEventAttributes.workflowId; // as servers before 1.21 wrote it
    // Its sub-agents' ids still name it: the replay reads it there.
    const older = path.join(dir, "no-id.json");
    writeFileSync(older, JSON.stringify(json));
    // ...unless they do not follow the sub-agent pattern either.
    for (const e of json.events)
      if (e.startChildWorkflowExecutionInitiatedEventAttributes)
        e.startChildWorkflowExecutionInitiatedEventAttributes.workflowId = "elsewhere";
    const unknown = path.join(dir, "no-id-anywhere.json");
    writeFileSync(unknown, JSON.stringify(json));
    const [fromChildren, none] = await Promise.all([replay(["--file", older]), replay(["--file", unknown])]);
    expect(fromChildren.stderr).toBe("");
    expect(fromChildren.code).toBe(0);
    expect(none.code).toBe(2);
    expect(oneLine(none.stderr)).toBe(
      `cannot replay ${unknown}: the history does not say its workflow id, and the ids of the sub-agents it started derive from it: pass --workflow-id <the run's workflow id>`,
    );
  }, 120_000);
});

describe("temporal workflow reset to an earlier turn", () => {
  it("a finished three-turn run reset to the workflow task before its second model call completes again with the same transcript", async () => {
    // Answers are a function of the context, as a model's are of its input: the reset run asks again and gets the same.
    const answer = (context: Context) => {
      const done = context.messages.filter((m) => m.role === "toolResult").length;
      return done < 2
        ? fauxAssistantMessage([fauxToolCall("count", { n: done + 1 }, { id: `c${done + 1}` })], {
            stopReason: "toolUse",
          })
        : fauxAssistantMessage(`counted to ${done}`);
    };
    const faux = fauxModel(Array.from({ length: 6 }, () => answer));
    const count: AgentTool = {
      name: "count",
      description: "counts",
      parameters: Type.Object({ n: Type.Number() }),
      execute: async (_id, args: { n: number }) => ({ content: [{ type: "text", text: `n=${args.n}` }] }),
    };
    const { worker, taskQueue } = await testWorker(env, [count]);
    const workflowId = uniqueId("reset");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "count to two",
      tools: ["count"],
    });
    // One worker throughout: it serves the run, then the run the reset starts.
    const { before, after, calls, task, redone } = await worker.runUntil(async () => {
      const before = await handle.result();
      const events = eventsOf(await exportHistory(workflowId, undefined, "reset-before.json"));
      // Turn 2's model call is the second streamAssistantMessage scheduled; the reset point, the workflow task that scheduled it.
      const calls = events.filter(
        (e) =>
          (e.activityTaskScheduledEventAttributes as { activityType?: { name?: string } } | undefined)?.activityType
            ?.name === "streamAssistantMessage",
      );
      const task = events
        .slice(0, events.indexOf(calls[1]))
        .reverse()
        .find((e) => e.workflowTaskCompletedEventAttributes)!;
      const reset = await temporalCli([
        "workflow",
        "reset",
        "--workflow-id",
        workflowId,
        "--event-id",
        task.eventId,
        "--reason",
        "redo turn 2",
        "--output",
        "json",
      ]);
      expect(reset.stderr).toBe("");
      expect(reset.code).toBe(0);
      const newRunId = (JSON.parse(reset.stdout) as { runId: string }).runId;
      const again = env.client.workflow.getHandle(workflowId, newRunId);
      const after = (await again.result()) as AgentRunResult;
      return { before, after, calls, task, redone: (await again.fetchHistory()).events ?? [], newRunId };
    });
    expect(before.turns).toBe(3);
    expect(calls).toHaveLength(3);
    // The new run's history holds the old run's events up to the reset point, then turns 2 and 3 made again.
    const scheduled = redone.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage",
    );
    expect(scheduled).toHaveLength(3);
    expect(Number(scheduled[0].eventId)).toBe(Number(calls[0].eventId));
    expect(Number(scheduled[1].eventId)).toBeGreaterThan(Number(task.eventId));
    expect(redone.some((e) => e.workflowTaskFailedEventAttributes)).toBe(true); // the reset's mark
    // Same transcript: same messages in the same order, times aside (the reset run made turns 2 and 3 later).
    const timeless = (messages: AgentMessage[]) =>
      JSON.parse(JSON.stringify(messages, (key, value) => (key === "timestamp" ? undefined : value))) as unknown;
    expect(after.stopReason).toBe("stop");
    expect(after.turns).toBe(before.turns);
    expect(timeless(after.messages)).toEqual(timeless(before.messages));
    // And the reset run replays from its own history file too.
    const resetFile = await exportHistory(workflowId, undefined, "reset-after.json");
    const replayed = await replay(["--file", resetFile]);
    expect(replayed.stderr).toBe("");
    expect(replayed.code).toBe(0);
  }, 180_000);
});
