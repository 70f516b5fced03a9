/**
 * Replay: every golden history replays against the current workflow code; a
 * changed loop is caught; histories recorded before a patched() change still
 * replay; the replay and show commands work on files and on live runs.
 */
import { describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "@temporalio/worker";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { readHistoryFile, replayHistory, replayOptions } from "../../src/worker/replay.js";
import { bundleAgentWorkflows } from "../../src/worker/worker.js";
import {
  APPROVAL_POLICY_PATCH,
  BASELINE_PATCH,
  BASELINE_V2_PATCH,
  BASELINE_V3_PATCH,
  BUDGET_PATCH,
  CLIENT_TOOLS_PATCH,
  CLIENT_WAIT_STATUS_PATCH,
  LOCAL_ACTIVITIES_PATCH,
  MEMO_PATCH,
} from "../../src/workflows/patches.js";
import { fauxModel, testWorker, uniqueId, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixturesDir = path.join(root, "test/fixtures/histories");
const fixtures = [
  ...readdirSync(fixturesDir).filter((f) => f.endsWith(".json")),
  ...readdirSync(path.join(fixturesDir, "frozen")).map((f) => `frozen/${f}`),
];

const env = withServer();

/** Runs one of the project's commands the way a user would (its entry point, no jest). */
function cli(script: string, args: string[]) {
  const run = spawnSync(process.execPath, [...nodeEntry(path.join(root, "src/cli", script)), ...args], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: "" },
    encoding: "utf8",
    timeout: 120000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

const hasPatchMarker = async (file: string, patchId?: string) =>
  ((await readHistoryFile(path.join(fixturesDir, file))).events ?? []).some(
    (e) =>
      e.markerRecordedEventAttributes?.markerName === "core_patch" &&
      (patchId === undefined ||
        Buffer.from(e.markerRecordedEventAttributes.details?.["patch-data"]?.payloads?.[0]?.data ?? [])
          .toString()
          .includes(`"${patchId}"`)),
  );

type HistoryEvent = NonNullable<Awaited<ReturnType<typeof readHistoryFile>>["events"]>[number];

/** What a run's first workflow task recorded besides its setup: patch markers and search-attribute upserts. */
function firstTaskShape(events: HistoryEvent[]) {
  const first = events.slice(
    0,
    events.findIndex((e) => e.activityTaskScheduledEventAttributes),
  );
  const upserts = first.map((e) =>
    Object.keys(e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields ?? {}),
  );
  return {
    patches: first.filter((e) => e.markerRecordedEventAttributes?.markerName === "core_patch").length,
    changeVersions: upserts.filter((keys) => keys.includes("TemporalChangeVersion")).length,
    agentUpserts: upserts.filter((keys) => keys.some((k) => k.startsWith("Agent"))).length,
  };
}

describe("golden histories", () => {
  it("has the representative runs", () => {
    for (const name of [
      "text-only",
      "fast-tools",
      "parallel-and-sequential-tools",
      "validation-error",
      "thrown-tool-error",
      "terminate",
      "max-turns",
      "approval-denied",
      "crash-recovered",
      "later-features",
      // One per run feature (issue 55): typed output, a budget, a fallback chain with a policy floor, a
      // tenant's sub-agent and its child.
      "typed-output",
      "budget-exceeded",
      "chain-and-floor",
      "sub-agent",
      "sub-agent-child",
    ]) {
      expect(fixtures).toContain(`${name}.json`);
    }
    expect(fixtures.filter((f) => f.startsWith("frozen/")).length).toBeGreaterThan(0);
  });

  it("replays every fixture against the current workflow code without nondeterminism", async () => {
    const bundle = await bundleAgentWorkflows();
    const histories = await Promise.all(
      fixtures.map(async (f) => {
        const history = await readHistoryFile(path.join(fixturesDir, f));
        // A run that started sub-agents names them after its own id (`<id>/sub-<turn>-<index>`): replay it under that id.
        const child = history.events?.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)
          ?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
        return { workflowId: child ? child.replace(/\/sub-\d+-\d+$/, "") : f, history };
      }),
    );
    const failures: string[] = [];
    let replayed = 0;
    for await (const result of Worker.runReplayHistories(replayOptions(bundle), histories)) {
      replayed++;
      if (result.error) failures.push(`${result.workflowId}: ${result.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(fixtures.length);
  }, 120000);

  it(`keeps histories recorded before the "${MEMO_PATCH}" patch replayable`, async () => {
    // The frozen ones predate the patch (no marker); the re-recorded ones carry it. Both replayed above.
    for (const f of fixtures.filter((f) => f.startsWith("frozen/before-memo-patch")))
      expect(await hasPatchMarker(f)).toBe(false);
    expect(await hasPatchMarker("parallel-and-sequential-tools.json")).toBe(true);
  });

  it(`keeps histories recorded before the "${LOCAL_ACTIVITIES_PATCH}" patch (regular setup and tool activities) replayable`, async () => {
    const before = fixtures.filter((f) => f.startsWith("frozen/before-local-activities"));
    expect(before.length).toBeGreaterThan(0);
    for (const f of before) expect(await hasPatchMarker(f, LOCAL_ACTIVITIES_PATCH)).toBe(false);
    expect(await hasPatchMarker("frozen/before-baseline-fast-tools.json", LOCAL_ACTIVITIES_PATCH)).toBe(true);
  });

  it(`keeps histories recorded before the baselines (a marker per change, two first upserts) replayable`, async () => {
    const before = fixtures.filter((f) => f.startsWith("frozen/before-baseline"));
    expect(before.length).toBe(2);
    for (const f of before) {
      expect(await hasPatchMarker(f, BASELINE_PATCH)).toBe(false);
      expect(await hasPatchMarker(f, LOCAL_ACTIVITIES_PATCH)).toBe(true);
    }
    // One of them upserted model/tools and status/counters apart, under their own markers.
    const old = await readHistoryFile(path.join(fixturesDir, "frozen/before-baseline-search-attributes.json"));
    expect(firstTaskShape(old.events ?? [])).toEqual({ patches: 4, changeVersions: 4, agentUpserts: 2 });
    expect(await hasPatchMarker("fast-tools.json", BASELINE_PATCH)).toBe(true);
  });

  it(`keeps histories recorded with "${BASELINE_V2_PATCH}" (a memo next to the search attributes) replayable`, async () => {
    const memoEvents = async (file: string) =>
      ((await readHistoryFile(path.join(fixturesDir, file))).events ?? []).filter(
        (e) => e.workflowPropertiesModifiedEventAttributes,
      ).length;
    // Replayed with the others above: the v2 run wrote the memo at its start and end, the v3 run does not.
    expect(await hasPatchMarker("frozen/baseline-v2-fast-tools.json", BASELINE_V2_PATCH)).toBe(true);
    expect(await memoEvents("frozen/baseline-v2-fast-tools.json")).toBe(2);
    expect(await hasPatchMarker("fast-tools.json", BASELINE_V2_PATCH)).toBe(false);
    expect(await memoEvents("fast-tools.json")).toBe(0);
  });

  it(`keeps histories recorded with "${BASELINE_V3_PATCH}" (a marker per later change, where it decided) replayable`, async () => {
    // Replayed with the others above. The same run recorded since v4 asks one patch, before its first command.
    const patchIds = async (file: string) =>
      ((await readHistoryFile(path.join(fixturesDir, file))).events ?? [])
        .filter((e) => e.markerRecordedEventAttributes?.markerName === "core_patch")
        .map((e) =>
          Buffer.from(e.markerRecordedEventAttributes?.details?.["patch-data"]?.payloads?.[0]?.data ?? []).toString(),
        )
        .map((data) => (JSON.parse(data) as { id: string }).id);
    expect(await patchIds("frozen/baseline-v3-later-features.json")).toEqual([
      BUDGET_PATCH,
      BASELINE_V3_PATCH,
      CLIENT_TOOLS_PATCH,
      APPROVAL_POLICY_PATCH,
      CLIENT_WAIT_STATUS_PATCH,
    ]);
    expect(await patchIds("later-features.json")).toEqual([BASELINE_PATCH]);
  });

  it("keeps a sub-agent tree recorded before the depth bound replayable (a run at depth 3 that started a child)", async () => {
    // Replayed with the others above. Its input records no depth (it predates subAgentDepth): it replays as the
    // top-level run it then was, so the bound does not refuse the call that started its child at depth 4.
    const events = (await readHistoryFile(path.join(fixturesDir, "frozen/before-subagent-depth.json"))).events ?? [];
    const started = events.find(
      (e) => e.workflowExecutionStartedEventAttributes,
    )?.workflowExecutionStartedEventAttributes;
    expect(started?.parentWorkflowExecution?.workflowId).toMatch(/\/sub-1-0\/sub-1-0$/);
    const child = events.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    expect(child?.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId).toMatch(/(\/sub-1-0){4}$/);
  });

  it("catches a changed loop: replaying against it reports nondeterminism and the event", async () => {
    const changed = await bundleAgentWorkflows(path.join(root, "test/fixtures/changed-workflow.ts"));
    const outcome = await replayHistory(
      await readHistoryFile(path.join(fixturesDir, "text-only.json")),
      "guard",
      changed,
    );
    expect(outcome.error?.nondeterminism).toBe(true);
    expect(outcome.error?.message).toMatch(new RegExp(`auditRun|${BASELINE_PATCH}`));
    // The first command of the first workflow task: the baseline's patch marker, which the changed loop no longer records first.
    expect(outcome.error?.eventId).toBe(5);
    expect(outcome.error?.event).toBe("markerRecorded");
  }, 60000);
});

describe("npm run replay / npm run show", () => {
  it("replays a history file: exit 0 when deterministic, 1 with the divergence otherwise", () => {
    const file = path.join(fixturesDir, "parallel-and-sequential-tools.json");
    const ok = cli("replay.ts", ["--file", file]);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^replayed \d+ events: deterministic$/m);
    const bad = cli("replay.ts", ["--file", file, "--workflows", "test/fixtures/changed-workflow.ts"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/replay of \d+ events diverged at event 5 \(markerRecorded\) \(nondeterminism\)/);
    expect(cli("replay.ts", []).code).toBe(2);
  }, 120000);

  it("replays a live run by workflow id and shows its transcript from history alone", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("lookup", { word: "ciao" }, { id: "c1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("Ciao means hello."),
    ]);
    const lookup = {
      name: "lookup",
      description: "d",
      parameters: Type.Object({ word: Type.String() }),
      execute: async () => ({ content: [{ type: "text" as const, text: "hello" }] }),
    };
    const { worker, taskQueue } = await testWorker(env, [lookup]);
    const workflowId = uniqueId("live");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      systemPrompt: "Translate.",
      prompt: "What does ciao mean?",
    });
    await worker.runUntil(handle.result());
    // A new run's first workflow task: one patch marker for every change, one upsert of its search attributes.
    const { events } = await handle.workflow.fetchHistory();
    expect(firstTaskShape(events ?? [])).toEqual({ patches: 1, changeVersions: 1, agentUpserts: 1 });
    // No worker runs from here on.
    const replay = cli("replay.ts", [workflowId]);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/replayed \d+ events: deterministic/);
    const show = cli("show.ts", [workflowId]);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("system: Translate.");
    expect(show.stdout).toContain("user: What does ciao mean?");
    expect(show.stdout).toContain('→ lookup {"word":"ciao"} (c1)');
    expect(show.stdout).toContain("✓ lookup (c1): hello");
    expect(show.stdout).toContain("Ciao means hello.");
    expect(show.stdout).toMatch(/usage: \d+ in \/ \d+ out/);
    expect(show.stdout).toContain("result: stop after 2 turns");
  }, 120000);
});
