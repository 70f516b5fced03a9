/** Shared bench plumbing: a dev server, one worker for every workflow of the bench, scripted models, tables. */
import { mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client, Connection } from "@temporalio/client";
import { DefaultLogger, NativeConnection, Runtime, Worker, type InjectedSinks } from "@temporalio/worker";
import { replayOptions, type History } from "../src/worker/replay.js";
import { Context as ActivityContext } from "@temporalio/activity";
import proto from "@temporalio/proto";
import {
  complete,
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  Type,
  type Api,
  type Context,
  type Model,
} from "@jai/ai";
import { createActivities } from "../src/worker/activities/index.js";
import { freePort, startDevServer, type DevServer } from "../src/node/dev-server.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { bundleAgentWorkflows } from "../src/worker/worker.js";
import type { AgentSinks } from "../src/shared/definitions.js";
import type { BenchActivities } from "./naive-workflows.js";
import { noMetricsSink } from "../src/worker/telemetry/metrics.js";

const here = path.dirname(fileURLToPath(import.meta.url));

export interface Bench {
  server: DevServer;
  client: Client;
  connection: NativeConnection;
  bundle: { code: string };
  close(): Promise<void>;
}

/**
 * `--server-config key=value` (repeatable): dynamic config of the bench's Temporal server (the dev server, or the
 * scale bench's cluster), e.g. `--server-config system.enableActivityEagerExecution=true`.
 */
export function serverConfig(): Record<string, string | number | boolean> {
  const dynamicConfig: Record<string, string | number | boolean> = {};
  process.argv.forEach((arg, i) => {
    if (arg !== "--server-config") return;
    const setting = process.argv[i + 1] ?? "";
    const at = setting.indexOf("=");
    const key = at < 0 ? setting : setting.slice(0, at);
    const value = at < 0 ? "true" : setting.slice(at + 1);
    if (!key) throw new Error("--server-config needs key=value");
    dynamicConfig[key] =
      value === "true" ? true : value === "false" ? false : Number.isNaN(Number(value)) ? value : Number(value);
  });
  return dynamicConfig;
}

/**
 * What the dev server does unlike a deployed server, undone so benches measure the loops as they run in production:
 * `temporal server start-dev` reads the namespace and the cluster metadata from its database (under one lock) on
 * every read of search attributes, so that attributes created at run time show at once; a deployed server caches
 * them. Runs that carry search attributes (ours: AgentStatus and the rest) paid ~2.8 more database requests per
 * turn for it than the peer's (23.0 against 22.6, of which GetCurrentClusterMetadata 4.6 against 2.7 and
 * GetNamespace 1.4 against 0.2; 15.8-17.6 against 17.7-18.5 without). The agent's attributes are registered at the
 * server's start, before any run. `--server-config system.forceSearchAttributesCacheRefreshOnRead=true` puts it back.
 */
const DEPLOYED_SERVER_CONFIG = { "system.forceSearchAttributesCacheRefreshOnRead": false };

export async function openBench(): Promise<Bench> {
  Runtime.install({ logger: new DefaultLogger("ERROR") });
  const dir = await mkdtemp(path.join(os.tmpdir(), "jai-bench-"));
  const server = await startDevServer({
    dbFile: path.join(dir, "bench.db"),
    uiPort: false,
    dynamicConfig: { ...DEPLOYED_SERVER_CONFIG, ...serverConfig() },
    metricsPort: await freePort(),
  });
  const connection = await NativeConnection.connect({ address: server.address });
  // The naive loop's history pages exceed gRPC's default 4 MB message size.
  const clientConnection = await Connection.connect({
    address: server.address,
    channelArgs: { "grpc.max_receive_message_length": 256 * 1024 * 1024 },
  });
  const bundle = await bundleAgentWorkflows(path.join(here, "workflows.ts"));
  return {
    server,
    client: new Client({ connection: clientConnection }),
    connection,
    bundle,
    async close() {
      await connection.close();
      await clientConnection.close();
      await server.stop();
    },
  };
}

/** A worker that serves the real loop and the bench baselines on one task queue. */
export async function benchWorker(
  bench: Bench,
  taskQueue: string,
  tools: AgentTool<any>[],
  models: Model<Api>[],
  extra: { maxConcurrentWorkflowTaskExecutions?: number; maxConcurrentActivityTaskExecutions?: number } = {},
) {
  const loop = createActivities({ tools, models, client: bench.client });
  const activities: BenchActivities & typeof loop = {
    ...loop,
    async naiveModel({ modelRef, messages, tools: specs }) {
      const model = models.find((m) => `${m.provider}/${m.id}` === modelRef)!;
      return complete(model, { messages, tools: specs });
    },
    async noop() {},
  };
  const sinks: InjectedSinks<AgentSinks> = {
    agent: { emit: { fn: () => {}, callDuringReplay: false } },
    metrics: noMetricsSink(),
  };
  return Worker.create({
    connection: bench.connection,
    taskQueue,
    activities,
    workflowBundle: bench.bundle,
    sinks,
    maxHeartbeatThrottleInterval: "1s",
    ...extra,
  });
}

/** A tool returning `bytes` of text, and a faux model that calls it `calls` times, answering from the context. */
export function pageScript(
  name: string,
  calls: number,
  bytes: number,
  options: { perTurn?: number; runs?: number; toolMs?: number } = {},
) {
  const perTurn = options.perTurn ?? 1;
  const body = "p".repeat(bytes);
  const tool: AgentTool = {
    name: "fetch_page",
    description: "returns a page",
    parameters: Type.Object({ n: Type.Number() }),
    execute: async (_id, args: any) => {
      if (options.toolMs) await new Promise((r) => setTimeout(r, options.toolMs));
      return { content: [{ type: "text", text: `page ${args.n}: ${body}` }] };
    },
  };
  const faux = registerFauxProvider({
    api: `bench-${name}`,
    provider: "bench",
    models: [{ id: name, contextWindow: 10_000_000, maxTokens: 1000 }],
  });
  /** When the provider received each request, per workflow id (first request, turn latencies). */
  const requests = new Map<string, number[]>();
  const answer = (context: Context) => {
    try {
      const id = ActivityContext.current().info.workflowExecution?.workflowId ?? "";
      requests.set(id, [...(requests.get(id) ?? []), Date.now()]);
    } catch {
      // Not inside an activity (pi-agent-core in process).
    }
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    if (done >= calls * perTurn) return fauxAssistantMessage(`read ${done} pages`);
    return fauxAssistantMessage(
      Array.from({ length: perTurn }, (_, i) =>
        fauxToolCall("fetch_page", { n: done + i + 1 }, { id: `c${done + i + 1}` }),
      ),
      { stopReason: "toolUse" },
    );
  };
  // The queue is consumed per call across all runs; every entry answers from its own context.
  const refill = () =>
    faux.setResponses(Array.from({ length: (calls + 1) * (options.runs ?? 1) * 2 + 10 }, () => answer));
  refill();
  return { tool, model: faux.getModel(), ref: `bench/${name}`, refill, answer, requests };
}

export const eventBytes = (e: proto.temporal.api.history.v1.IHistoryEvent) =>
  proto.temporal.api.history.v1.HistoryEvent.encode(e).finish().length;

export { median, quantile } from "./stats.js";

export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i])).join(" | ")} |`;
  return [
    line(headers),
    `| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`,
    ...rows.map((r) => line(r.map(String))),
  ].join("\n");
}

export const mb = (n: number) => `${(n / 1024 / 1024).toFixed(2)} MB`;

/**
 * The server's persistence requests so far, by operation (`persistence_requests` and
 * `visibility_persistence_requests` summed over its services): what a batch of turns costs its database.
 */
export async function persistenceRequests(server: DevServer): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  if (!server.metricsUrl) return counts;
  const text = await (await fetch(server.metricsUrl)).text();
  for (const line of text.split("\n")) {
    const m = /^(visibility_)?persistence_requests\{[^}]*operation="([^"]+)"[^}]*\} ([0-9.e+]+)$/.exec(line);
    if (!m) continue;
    const op = `${m[1] ? "visibility " : ""}${m[2]}`;
    counts.set(op, (counts.get(op) ?? 0) + Number(m[3]));
  }
  return counts;
}

/** Requests by operation between two `persistenceRequests` readings. */
export function requestsBetween(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  return new Map([...after].map(([op, n]) => [op, n - (before.get(op) ?? 0)] as const));
}

/** Whether a persistence operation writes (the rest read): what a disk-backed server pays an fsync for. */
const isWrite = (op: string) =>
  /^(visibility )?(Create|Update|Upsert|Record|Complete|RangeComplete|Delete|Append|Put|Save|Insert)/.test(op);

/** Writes and reads among requests by operation (per turn when given per-turn counts). */
export function writesAndReads(requests: Map<string, number>): { writes: number; reads: number } {
  let writes = 0;
  let reads = 0;
  for (const [op, n] of requests) {
    if (isWrite(op)) writes += n;
    else reads += n;
  }
  return { writes, reads };
}

/** Requests per turn by operation, largest first: "writes w, all n: op 1.23, ...". */
export function perTurnRequests(requests: Map<string, number>, turns: number): string {
  const perTurn = new Map([...requests].map(([op, n]) => [op, n / turns] as const));
  const { writes, reads } = writesAndReads(perTurn);
  return `writes ${writes.toFixed(2)}, all ${(writes + reads).toFixed(2)}: ${[...perTurn]
    .filter(([, n]) => n >= 0.01)
    .sort((a, b) => b[1] - a[1])
    .map(([op, n]) => `${op} ${n.toFixed(2)}`)
    .join(", ")}`;
}

/**
 * Ms per replay of `histories`, replayed one after another in one replay worker, after a warm-up replay of the
 * first (that one also builds the worker: bundle, V8 context). Throws the first replay that fails.
 */
export async function replayMsEach(
  bundle: { code: string },
  histories: { workflowId: string; history: History }[],
): Promise<number> {
  async function* warmedUp() {
    yield histories[0];
    yield* histories;
  }
  const done: number[] = [];
  for await (const result of Worker.runReplayHistories(replayOptions(bundle), warmedUp())) {
    if (result.error) throw new Error(`replaying ${result.workflowId} failed: ${String(result.error)}`);
    done.push(performance.now());
  }
  return (done[done.length - 1] - done[0]) / histories.length;
}

/**
 * A task queue's statistics as the server reports them (`DescribeTaskQueue` with `reportStats`: approximate
 * backlog and the age of its oldest task), for its workflow or its activity tasks; undefined when the server
 * reports none or the call failed (a busy server: the caller's next sample counts).
 */
export async function taskQueueStats(
  client: Client,
  taskQueue: string,
  type: "workflow" | "activity",
): Promise<{ backlog: number; oldestS: number } | undefined> {
  const { TaskQueueKind, TaskQueueType } = proto.temporal.api.enums.v1;
  const { stats } = await client.workflowService
    .describeTaskQueue({
      namespace: "default",
      taskQueue: { name: taskQueue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType:
        type === "workflow" ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      reportStats: true,
    })
    .catch(() => ({ stats: undefined }));
  if (!stats) return undefined;
  return {
    backlog: Number(stats.approximateBacklogCount ?? 0),
    oldestS: Number(stats.approximateBacklogAge?.seconds ?? 0),
  };
}
