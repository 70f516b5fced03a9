/**
 * `npm run bench -- deploy`: how long a deploy through Worker Deployment Versioning takes to drain the old version.
 * Version A (the real loop) serves pinned runs that work through their turns (a tool that takes `--deploy-tool-ms`
 * per turn) and sessions that a client prompts every `--deploy-prompt-ms`; version B (test/fixtures/changed-loop.ts,
 * a loop no history of A replays on) is started beside it and made current once every run has done a turn. From
 * that moment: when A's last pinned run completed, when each session continued as new from A to B (times from the
 * histories), when no open run was left on A, when the server reported A drained, and how long A's worker then took
 * to stop. On the deploy test's server (test/support/deploy.ts: Temporal 1.32 on SQLite, its drainage check every
 * second; a deployed server checks every 3 min after a 3 min grace).
 *
 * Sizes by flag: `--deploy-runs=50 --deploy-sessions=10 --deploy-turns=6 --deploy-tool-ms=1000 --deploy-prompt-ms=5000`.
 */
import { fileURLToPath } from "node:url";
import type { WorkflowHandleWithFirstExecutionRunId } from "@temporalio/client";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../src/client/client.js";
import { bundleAgentWorkflows, createAgentWorker, type AgentWorker } from "../src/worker/worker.js";
import type { AgentTool } from "../src/shared/contracts.js";
import {
  buildIdsOf,
  chainHistories,
  endOf,
  failedTasks,
  makeCurrent,
  openDeployEnv,
  versionStatus,
  type DeployEnv,
} from "../test/support/deploy.js";
import { table, type Bench } from "./common.js";
import { flag } from "./scale.js";
import { quantile } from "./stats.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sec = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const firstRunId = (h: AgentRunHandle) => (h.workflow as WorkflowHandleWithFirstExecutionRunId).firstExecutionRunId;

interface Size {
  runs: number;
  sessions: number;
  turns: number;
  toolMs: number;
  promptMs: number;
}

interface Measured {
  /** From B current: A's last pinned run completed. */
  lastPinned: number;
  /** From B current: each session's continue-as-new from A to B. */
  moved: number[];
  /** From B current: no open run on A (the later of the two above). */
  empty: number;
  /** From B current: the server says A is drained. */
  drained: number;
  /** From the shutdown call: A's worker stopped. */
  stopped: number;
  /** Turns the pinned runs still had to go when B became current. */
  turnsLeft: number[];
  failedTasks: number;
  lost: number;
  wrongVersion: number;
}

async function measure(env: DeployEnv, size: Size, bundleA: { code: string }): Promise<Measured> {
  const { client } = env;
  const name = `jai-bench-${Date.now()}`;
  const taskQueue = `${name}-queue`;
  const work: AgentTool = {
    name: "work",
    description: "One turn's work",
    parameters: Type.Object({}),
    async execute() {
      await sleep(size.toolMs);
      return { content: [{ type: "text", text: "worked" }] };
    },
  };
  const respond = (context: Context) => {
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    const content = context.messages[0]?.content;
    const text =
      typeof content === "string"
        ? content
        : Array.isArray(content)
          ? content.map((c) => ("text" in c ? c.text : "")).join("")
          : "";
    if (text.startsWith("run") && done < size.turns)
      return fauxAssistantMessage([fauxToolCall("work", {}, { id: `w-${done}` })], { stopReason: "toolUse" });
    return fauxAssistantMessage("ok");
  };
  const faux = registerFauxProvider();
  faux.setResponses(Array.from({ length: size.runs * (size.turns + 1) + size.sessions * 200 }, () => respond));
  const model = faux.getModel();
  const worker = (buildId: string, bundle: { code: string }) =>
    createAgentWorker({
      connection: env.connection,
      taskQueue,
      tools: [work],
      workflowBundle: bundle,
      deployment: { name, buildId },
      events: false,
    });
  const bundleB = await bundleAgentWorkflows(
    fileURLToPath(new URL("../test/fixtures/changed-loop.ts", import.meta.url)),
  );
  const a: AgentWorker = await worker("A", bundleA);
  const runningA = a.run();
  let b: AgentWorker | undefined;
  let runningB: Promise<void> | undefined;
  let prompting = true;
  try {
    await makeCurrent(client, name, "A");
    const runs = await Promise.all(
      Array.from({ length: size.runs }, (_, i) =>
        startAgentRun(client, { taskQueue, workflowId: `${name}-run-${i}`, model, prompt: `run ${i}` }),
      ),
    );
    const sessions = await Promise.all(
      Array.from({ length: size.sessions }, (_, i) =>
        startAgentRun(client, {
          taskQueue,
          workflowId: `${name}-session-${i}`,
          model,
          prompt: `hello ${i}`,
          session: true,
        }),
      ),
    );
    // A client prompts each session every promptMs (spread over the interval), until the bench ends.
    const prompts = sessions.map(async (h, i) => {
      await sleep((i * size.promptMs) / size.sessions);
      for (let n = 0; prompting; n++) {
        await h.prompt(`prompt ${n}`);
        await sleep(size.promptMs);
      }
    });
    // Every run has done a turn before the rollout.
    for (const deadline = Date.now() + 120_000; ; await sleep(250)) {
      const states = await Promise.all(runs.map((h) => h.state()));
      if (states.every((s) => s.turn >= 2)) break;
      if (Date.now() > deadline) throw new Error("the runs did not start their turns within 2 min");
    }
    b = await worker("B", bundleB);
    runningB = b.run();
    await makeCurrent(client, name, "B", { covering: "A" });
    const rollout = Date.now();
    const turnsLeft = (await Promise.all(runs.map((h) => h.state()))).map((s) => size.turns + 1 - s.turn);
    let drainedAt: number | undefined;
    for (const deadline = Date.now() + 30 * 60_000; drainedAt === undefined; await sleep(250)) {
      if ((await versionStatus(client, name, "A")) === "drained") drainedAt = Date.now();
      if (Date.now() > deadline) throw new Error("A was not drained within 30 min");
    }
    const stopping = Date.now();
    a.shutdown();
    await runningA;
    const stopped = Date.now() - stopping;
    prompting = false;
    await Promise.allSettled(prompts);

    const eventTime = (e: { eventTime?: { seconds?: unknown; nanos?: number | null } | null } | undefined) =>
      Number(e?.eventTime?.seconds ?? 0) * 1000 + Math.round((e?.eventTime?.nanos ?? 0) / 1e6);
    const pinned = await Promise.all(runs.map((h) => chainHistories(client, h.workflowId, firstRunId(h))));
    const chains = await Promise.all(sessions.map((h) => chainHistories(client, h.workflowId, firstRunId(h))));
    const onA = (chain: (typeof pinned)[number]) => chain.filter((r) => buildIdsOf(r.events).includes("A"));
    const lastPinned = Math.max(...pinned.map((chain) => eventTime(chain.at(-1)!.events.at(-1)) - rollout));
    const moved = chains.map((chain) => eventTime(onA(chain).at(-1)!.events.at(-1)) - rollout);
    const all = [...pinned, ...chains].flat();
    return {
      lastPinned,
      moved,
      empty: Math.max(lastPinned, ...moved),
      drained: drainedAt - rollout,
      stopped,
      turnsLeft,
      failedTasks: all.flatMap((r) => failedTasks(r.events)).length,
      lost: pinned.filter((chain) => endOf(chain.at(-1)!.events) !== "completed").length,
      wrongVersion:
        pinned.filter((chain) => chain.some((r) => buildIdsOf(r.events).join() !== "A")).length +
        chains.filter((chain) => !buildIdsOf(chain.at(-1)!.events).every((id) => id === "B")).length,
    };
  } finally {
    prompting = false;
    if (a.worker.getState() === "RUNNING") a.shutdown();
    b?.shutdown();
    await Promise.allSettled([runningA, runningB]);
  }
}

export async function deploy(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const size: Size = {
    runs: Number(flag("deploy-runs") ?? 50),
    sessions: Number(flag("deploy-sessions") ?? 10),
    turns: Number(flag("deploy-turns") ?? 6),
    toolMs: Number(flag("deploy-tool-ms") ?? 1000),
    promptMs: Number(flag("deploy-prompt-ms") ?? 5000),
  };
  const env = await openDeployEnv({}, (line) => console.error(line));
  let m: Measured;
  try {
    m = await measure(env, size, bench.bundle);
  } finally {
    await env.close();
  }
  const markdown = [
    `### A deploy through Worker Deployment Versioning (${size.runs} pinned runs of ${size.turns} tool turns of ${sec(size.toolMs)}, ${size.sessions} sessions prompted every ${sec(size.promptMs)}; B made current once every run had done a turn)`,
    "",
    "Times from the moment B became current (`bench/deploy.ts`): A's last pinned run completed; each session continued as new from A to B (at the end of the first prompt it answered after the rollout); no open run was left on A; the server reported A drained (its drainage check every second here; a deployed server's every 3 min after a 3 min grace adds up to ~6 min); A's worker stopped once told to. Every pinned run's workflow tasks on A only, every session's newest run on B only.",
    "",
    table(
      [
        "turns left at rollout (max)",
        "last pinned run done",
        "sessions moved: p50 / last",
        "A empty",
        "server: A drained",
        "A's worker stopped in",
        "failed workflow tasks",
        "runs lost",
        "on the wrong version",
      ],
      [
        [
          Math.max(...m.turnsLeft),
          sec(m.lastPinned),
          `${sec(quantile(m.moved, 0.5))} / ${sec(Math.max(...m.moved))}`,
          sec(m.empty),
          sec(m.drained),
          sec(m.stopped),
          m.failedTasks,
          m.lost,
          m.wrongVersion,
        ],
      ],
    ),
  ].join("\n");
  const bound = Math.max(...m.turnsLeft) * size.toolMs + size.promptMs + 10_000;
  const met = m.failedTasks === 0 && m.lost === 0 && m.wrongVersion === 0 && m.empty <= bound;
  const goals = [
    `Deploy: A empties within its runs' remaining turns and one prompt interval + 10 s (${sec(bound)}; took ${sec(m.empty)}), 0 failed workflow tasks (${m.failedTasks}), 0 runs lost (${m.lost}), every run on its version (${m.wrongVersion} not): ${met ? "met" : "NOT met"}`,
  ];
  return { markdown, goals };
}
