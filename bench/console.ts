/**
 * The console's list (issue 40): `GET /runs` through the real HTTP server (src/http/server.ts, run-list.ts) with
 * 1,000 runs in visibility. The runs cost one model call each on one worker: 900 answer at once and complete,
 * 100 call a tool that requires approval and stay waiting for it (what the list pins on top and the "waiting
 * for approval" filter finds). Timed once visibility lists them all: median of several calls per page.
 */
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../src/client/client.js";
import { startRunServer } from "../src/http/server.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { AGENT_RUN_WORKFLOW } from "../src/shared/definitions.js";
import { benchWorker, median, table, type Bench } from "./common.js";

const RUNS = 1000;
const WAITING = 100;
const CALLS = 9;
const GOAL_MS = 1000;

const deploy: AgentTool = {
  name: "deploy",
  description: "Deploys (waits for a person)",
  parameters: Type.Object({}),
  requiresApproval: true,
  async execute() {
    return { content: [{ type: "text", text: "deployed" }] };
  },
};

const promptOf = (context: Context) => {
  const first = context.messages.find((m) => m.role === "user");
  return typeof first?.content === "string" ? first.content : JSON.stringify(first?.content ?? "");
};

export async function consoleList(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const taskQueue = `bench-console-${Date.now()}`;
  const faux = registerFauxProvider({ api: "bench-console", provider: "bench", models: [{ id: "console" }] });
  faux.setResponses(
    Array.from(
      { length: RUNS + 50 },
      () => (context: Context) =>
        promptOf(context).startsWith("deploy")
          ? fauxAssistantMessage([fauxToolCall("deploy", {})], { stopReason: "toolUse" })
          : fauxAssistantMessage(`Done: ${promptOf(context)}`),
    ),
  );
  const worker = await benchWorker(bench, taskQueue, [deploy], [faux.getModel()], {
    maxConcurrentWorkflowTaskExecutions: 200,
  });
  const server = await startRunServer({ client: bench.client, port: 0, token: "bench-console" });
  const stamp = Date.now();
  const ids: string[] = [];
  try {
    const { startMs, visibleMs } = await worker.runUntil(async () => {
      const t0 = performance.now();
      // 50 starts in flight at a time: the dev server's SQLite takes them in turn anyway.
      for (let i = 0; i < RUNS; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, RUNS - i) }, (_, j) => {
            const n = i + j;
            const waiting = n % (RUNS / WAITING) === 0;
            return startAgentRun(bench.client, {
              taskQueue,
              workflowId: `console-${stamp}-${n}`,
              model: faux.getModel(),
              prompt: waiting ? `deploy build ${n}` : `summarise report ${n}`,
            });
          }),
        );
        ids.push(...batch.map((h) => h.workflowId));
      }
      const startMs = performance.now() - t0;
      // Settled and listed: every run completed or waiting for approval, as visibility says.
      const inQueue = `WorkflowType = "${AGENT_RUN_WORKFLOW}" AND TaskQueue = "${taskQueue}"`;
      const deadline = Date.now() + 5 * 60_000;
      for (;;) {
        const [completed, waiting] = await Promise.all([
          bench.client.workflow.count(`${inQueue} AND AgentStatus = "completed"`),
          bench.client.workflow.count(`${inQueue} AND AgentStatus = "waiting_for_approval"`),
        ]);
        if (completed.count === RUNS - WAITING && waiting.count === WAITING) break;
        if (Date.now() > deadline)
          throw new Error(
            `visibility lists ${completed.count} completed and ${waiting.count} waiting runs after 5 min`,
          );
        await new Promise((r) => setTimeout(r, 250));
      }
      return { startMs, visibleMs: performance.now() - t0 };
    });

    const get = async (query: string) => {
      const t = performance.now();
      const res = await fetch(`${server.url}/runs${query}`, { headers: { authorization: `Bearer ${server.token}` } });
      const body = (await res.json()) as { pinned: unknown[]; runs: unknown[]; nextPageToken?: string };
      if (res.status !== 200) throw new Error(`GET /runs${query}: ${res.status} ${JSON.stringify(body)}`);
      return { ms: performance.now() - t, body };
    };
    const time = async (query: string) => {
      const first = await get(query); // warm-up, not counted
      const times: number[] = [];
      for (let i = 0; i < CALLS; i++) times.push((await get(query)).ms);
      return {
        ms: median(times),
        max: Math.max(...times),
        pinned: first.body.pinned.length,
        rows: first.body.runs.length,
        next: first.body.nextPageToken,
      };
    };
    const firstPage = await time("");
    const secondPage = await time(`?pageToken=${firstPage.next ?? ""}`);
    const approval = await time("?status=approval");
    const completed = await time("?status=completed&text=report");
    const rows: [string, Awaited<ReturnType<typeof time>>][] = [
      ["first page, unfiltered (waiting runs pinned on top)", firstPage],
      ["second page, unfiltered", secondPage],
      ["waiting for approval", approval],
      ['completed, summary words "report"', completed],
    ];
    const slowest = Math.max(firstPage.ms, approval.ms);
    const markdown = [
      `### Console list (${RUNS.toLocaleString("en")} runs in visibility: ${RUNS - WAITING} completed, ${WAITING} waiting for approval)`,
      "",
      `\`GET /runs\` through the run server (src/http/server.ts) on loopback, dev server (SQLite visibility); median of ${CALLS} calls after a warm-up. Starting the ${RUNS} runs took ${(startMs / 1000).toFixed(1)} s, until visibility listed them all settled ${(visibleMs / 1000).toFixed(1)} s.`,
      "",
      table(
        ["page", "rows (pinned + listed)", "median", "slowest"],
        rows.map(([what, r]) => [what, `${r.pinned} + ${r.rows}`, `${r.ms.toFixed(1)} ms`, `${r.max.toFixed(1)} ms`]),
      ),
    ].join("\n");
    return {
      markdown,
      goals: [
        `console list of 1,000 runs < 1 s: first page ${firstPage.ms.toFixed(0)} ms, waiting for approval ${approval.ms.toFixed(0)} ms: ${slowest < GOAL_MS ? "met" : "NOT met"}`,
      ],
    };
  } finally {
    await server.close();
    // The waiting runs would wait forever: end them, so later sections share a quiet server.
    const open = ids.filter((_, n) => n % (RUNS / WAITING) === 0);
    await Promise.allSettled(open.map((id) => bench.client.workflow.getHandle(id).terminate("bench done")));
  }
}
