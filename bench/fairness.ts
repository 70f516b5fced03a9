/**
 * Fairness (issue 42 part 4, docs/tenants.md): on the Temporal server built from source (v1.29.1, PostgreSQL: the
 * cluster suite's), tenant A floods FLOOD runs, then tenant B starts B_RUNS. One worker with ACTIVITY_SLOTS model
 * calls at once, each taking MODEL_MS, so A's model calls back up in the activity queue. Measured: B's time from
 * start to its model call (the part of time to first token that waits in queues), alone, under the flood with
 * fairness off, and with it on (`matching.enableFairness: true` in the server's dynamic config; each run's priority
 * carries `fairnessKey: <tenant>`). Sizes: `--fairness-flood=300 --fairness-b=10 --fairness-slots=4 --fairness-model-ms=200`.
 */
import { Client, Connection } from "@temporalio/client";
import { NativeConnection } from "@temporalio/worker";
import { Context as ActivityContext } from "@temporalio/activity";
import { fauxAssistantMessage, registerFauxProvider } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../src/client/client.js";
import { ensureTemporalServer } from "../scripts/tools.js";
import { startPostgres } from "../test/support/cluster/postgres.js";
import { createTemporalServer, freeLowPort, setupSchema } from "../test/support/cluster/temporal-server.js";
import { AGENT_SEARCH_ATTRIBUTES } from "../src/shared/search-attributes.js";
import { benchWorker, median, serverConfig, table, taskQueueStats, type Bench } from "./common.js";

function flag(name: string, fallback: number): number {
  const hit = process.argv.find((a) => a.startsWith(`--${name}=`));
  return hit ? Number(hit.slice(hit.indexOf("=") + 1)) : fallback;
}

const FLOOD = flag("fairness-flood", 300);
const B_RUNS = flag("fairness-b", 10);
const ACTIVITY_SLOTS = flag("fairness-slots", 4);
const MODEL_MS = flag("fairness-model-ms", 200);

interface Figures {
  /** B's ms from start to model call, each run. */
  bAlone: number[];
  bFlood: number[];
  /** Ms from the first A start to the last A run's model call. */
  aDrain: number;
  /** A's model calls between B's first start and B's last model call (perfect 1:1 interleaving: about B_RUNS). */
  aAhead: number;
  /** Ms from A's first start until all of A's model calls were scheduled (B starts then). */
  settledMs: number;
}

/**
 * Waits until `runs` model calls of the flood are scheduled (started, or in the activity queue's backlog as the
 * server reports it), at most 60 s; returns how long that took.
 */
async function modelQueueHolds(client: Client, taskQueue: string, runs: number, started: () => number) {
  const t = Date.now();
  while (Date.now() - t < 60_000) {
    const stats = await taskQueueStats(client, taskQueue, "activity");
    if ((stats?.backlog ?? 0) + started() >= runs) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return Date.now() - t;
}

/** PostgreSQL and the server built from source, with `dynamicConfig`; the agent's search attributes registered. */
async function cluster(dynamicConfig: Record<string, boolean | number | string>) {
  const tools = ensureTemporalServer((line) => console.error(line));
  const pg = startPostgres(await freeLowPort(new Set()));
  try {
    setupSchema(tools, pg.port);
    const server = await createTemporalServer(tools, pg.port, {
      "system.forceSearchAttributesCacheRefreshOnRead": true,
      // `--server-config key=value` too, e.g. matching.numTaskqueueReadPartitions=1.
      ...serverConfig(),
      ...dynamicConfig,
    });
    const connection = await Connection.connect({ address: server.address });
    const native = await NativeConnection.connect({ address: server.address });
    // As a deployment has them (create-namespace.sh): the runs upsert theirs, the starts set AgentTenant.
    const types = { TEXT: 1, KEYWORD: 2, INT: 3, DOUBLE: 4, BOOL: 5, DATETIME: 6, KEYWORD_LIST: 7 } as const;
    await connection.operatorService.addSearchAttributes({
      namespace: "default",
      searchAttributes: Object.fromEntries(AGENT_SEARCH_ATTRIBUTES.map((k) => [k.name, types[k.type]])),
    });
    return {
      client: new Client({ connection }),
      native,
      async close() {
        await native.close();
        await connection.close();
        await server.stop();
        server.cleanup();
        pg.stop();
      },
    };
  } catch (err) {
    pg.stop();
    throw err;
  }
}

async function measure(bench: Bench, fairness: boolean): Promise<Figures> {
  const target = await cluster(fairness ? { "matching.enableFairness": true } : {});
  try {
    // The model: when each run's call reached it, then MODEL_MS of "thinking" before its answer.
    const called = new Map<string, number>();
    const faux = registerFauxProvider({
      api: `bench-fairness-${fairness}`,
      provider: "bench",
      models: [{ id: "fair", contextWindow: 100_000, maxTokens: 100 }],
    });
    const answer = async () => {
      const id = ActivityContext.current().info.workflowExecution?.workflowId ?? "";
      if (!called.has(id)) called.set(id, Date.now());
      await new Promise((r) => setTimeout(r, MODEL_MS));
      return fauxAssistantMessage("ok");
    };
    faux.setResponses(Array.from({ length: (FLOOD + 2 * B_RUNS) * 3 + 20 }, () => answer));
    const model = faux.getModel();
    const taskQueue = `bench-fairness-${fairness ? "on" : "off"}`;
    const worker = await benchWorker(
      { ...bench, client: target.client, connection: target.native },
      taskQueue,
      [],
      [model],
      { maxConcurrentActivityTaskExecutions: ACTIVITY_SLOTS },
    );
    const startRun = async (tenant: string, workflowId: string) => {
      const at = Date.now();
      const handle = await startAgentRun(target.client, { taskQueue, workflowId, tenant, model, prompt: "go" });
      return { handle, at };
    };
    const waitFor = (runs: { handle: AgentRunHandle }[]) => Promise.all(runs.map((r) => r.handle.result()));
    const sinceStart = (runs: { handle: AgentRunHandle; at: number }[]) =>
      runs.map((r) => (called.get(r.handle.workflowId) ?? NaN) - r.at);

    return await worker.runUntil(async () => {
      // A warm-up run, then B alone.
      await waitFor([await startRun("W", "warm-up")]);
      const alone = await Promise.all(Array.from({ length: B_RUNS }, (_, i) => startRun("B", `b-alone-${i}`)));
      await waitFor(alone);
      // A floods: FLOOD runs, 50 starts in flight at a time; then B starts its runs.
      const floodStart = Date.now();
      const flood: { handle: AgentRunHandle; at: number }[] = [];
      for (let i = 0; i < FLOOD; i += 50)
        flood.push(
          ...(await Promise.all(
            Array.from({ length: Math.min(50, FLOOD - i) }, (_, j) => startRun("A", `a-${i + j}`)),
          )),
        );
      // B arrives once A's runs wait for the model: fairness orders a queue's backlog (here the model calls'), not the
      // worker's own work on A's first workflow tasks, which a flood of starts puts before anything B starts.
      const settledIn = await modelQueueHolds(
        target.client,
        taskQueue,
        FLOOD,
        () => [...called.keys()].filter((id) => id.startsWith("a-")).length,
      );
      const b = await Promise.all(Array.from({ length: B_RUNS }, (_, i) => startRun("B", `b-flood-${i}`)));
      await waitFor([...flood, ...b]);
      const bLast = Math.max(...b.map((r) => called.get(r.handle.workflowId) ?? 0));
      return {
        settledMs: settledIn,
        bAlone: sinceStart(alone),
        bFlood: sinceStart(b),
        aDrain: Math.max(...flood.map((r) => called.get(r.handle.workflowId) ?? 0)) - floodStart,
        aAhead: flood.filter((r) => {
          const at = called.get(r.handle.workflowId) ?? Infinity;
          return at >= b[0].at && at < bLast;
        }).length,
      };
    });
  } finally {
    await target.close();
  }
}

export async function fairness(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const off = await measure(bench, false);
  const on = await measure(bench, true);
  const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
  const p50Alone = median([...off.bAlone, ...on.bAlone]);
  const ratio = median(on.bFlood) / p50Alone;
  const row = (label: string, f: Figures, bMs: number[]) => [
    label,
    s(median(bMs)),
    s(Math.max(...bMs)),
    `${(median(bMs) / p50Alone).toFixed(1)}×`,
    f.aAhead,
    s(f.aDrain),
  ];
  const markdown = [
    `### Fairness: tenant A floods ${FLOOD} runs, tenant B starts ${B_RUNS} (Temporal server v1.29.1 on PostgreSQL, one worker, ${ACTIVITY_SLOTS} model calls at once, ${MODEL_MS} ms each)`,
    "",
    "B's time from start to its model call (what time to first token waits in queues); A's model calls served while B's waited (from B's first start to B's last call); A's drain time from its first start.",
    "",
    table(
      ["B's runs", "B p50", "B max", "p50 vs alone", "A's calls while B's waited", "A drained in"],
      [
        [
          "alone (fairness off / on)",
          `${s(median(off.bAlone))} / ${s(median(on.bAlone))}`,
          s(Math.max(...off.bAlone, ...on.bAlone)),
          "1.0×",
          "-",
          "-",
        ],
        row("under A's flood, fairness off", off, off.bFlood),
        row("under A's flood, fairness on (`matching.enableFairness`)", on, on.bFlood),
      ],
    ),
    "",
    "Command: `npm run bench -- fairness` (`--fairness-flood=300 --fairness-b=10 --fairness-slots=4 --fairness-model-ms=200`).",
  ].join("\n");
  return {
    markdown,
    goals: [
      `fairness on: B's p50 within 2× of B alone under A's flood of ${FLOOD}: ${ratio.toFixed(1)}× (${ratio <= 2 ? "met" : "NOT met"})`,
    ],
  };
}
