/**
 * Following runs live (issue 13), measured for the transport we ship: the worker's event tap + SSE.
 * One 10-tool-turn run per row, the faux model streaming text at a fixed rate and calling one small tool
 * per turn. Rows: streaming off (a plain worker), streaming on (tap + run server) with 0, 1, 3 and 10
 * subscribers (one in another process, the rest handle.events() here). Token-delta latency: the worker
 * stamps each message_update when the provider's stream yields it (before the tap sees it); the
 * subscriber process stamps it on arrival; only deltas emitted after that subscriber was attached count
 * (earlier ones are catch-up, not live). Slow/vanished: on an unthrottled bulk run, a subscriber process
 * frozen with SIGSTOP (stops reading) and one killed, against none and two healthy ones,
 * with a tap capped small enough that its trimming engages.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider, Type, type Context } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../src/client/client.js";
import { startRunEventsService, type RunEventsService } from "../src/worker/events/serve.js";
import { EventTap } from "../src/worker/events/tap.js";
import type { AgentEvent, AgentTool } from "../src/shared/contracts.js";
import { createAgentWorker, type AgentWorker } from "../src/worker/worker.js";
import { eventBytes, median, quantile, table, type Bench } from "./common.js";

const TURNS = 10;
const TOKENS_PER_SECOND = 150;
const SMALL_TAP_BYTES = 256 * 1024;
const BULK_TEXT = 40_000;
const STALL_RUNS = 4;
const here = path.dirname(fileURLToPath(import.meta.url));
const text = (n: number) =>
  `Turn ${n}: I looked at what we have so far and the next useful step is to check item ${n} with the lookup tool, ` +
  `then compare it with the earlier results before deciding whether anything else is needed for the answer.`;

function streamingScript() {
  const tool: AgentTool = {
    name: "lookup",
    description: "looks an item up",
    parameters: Type.Object({ n: Type.Number() }),
    execute: async (_id, args: any) => ({ content: [{ type: "text", text: `item ${args.n}: ok` }] }),
  };
  const faux = registerFauxProvider({
    api: "bench-streaming",
    provider: "bench",
    models: [{ id: "streaming", contextWindow: 1_000_000, maxTokens: 1000 }],
    tokensPerSecond: TOKENS_PER_SECOND,
  });
  const answer = (context: Context) => {
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    if (done >= TURNS) return fauxAssistantMessage(`${text(done + 1)} Done: all ${done} items are ok.`);
    return fauxAssistantMessage(
      [fauxText(text(done + 1)), fauxToolCall("lookup", { n: done + 1 }, { id: `c${done + 1}` })],
      { stopReason: "toolUse" },
    );
  };
  faux.setResponses(Array.from({ length: 1000 }, () => answer));
  return { tool, model: faux.getModel() };
}

/** For the slow-subscriber rows: no rate limit and BULK_TEXT characters per message, megabytes of events per subscriber. */
function bulkScript() {
  const faux = registerFauxProvider({
    api: "bench-streaming-bulk",
    provider: "bench",
    models: [{ id: "streaming-bulk", contextWindow: 100_000_000, maxTokens: 1000 }],
  });
  const body = (n: number) =>
    text(n)
      .repeat(Math.ceil(BULK_TEXT / text(n).length))
      .slice(0, BULK_TEXT);
  const answer = (context: Context) => {
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    if (done >= TURNS) return fauxAssistantMessage(body(done + 1));
    return fauxAssistantMessage(
      [fauxText(body(done + 1)), fauxToolCall("lookup", { n: done + 1 }, { id: `c${done + 1}` })],
      { stopReason: "toolUse" },
    );
  };
  faux.setResponses(Array.from({ length: 1000 }, () => answer));
  return faux.getModel();
}

interface Arrival {
  t: number;
  type: AgentEvent["type"];
}

/** The subscriber in another process: bench/streaming-child.ts; arrivals collected as it prints them. */
function childSubscriber(address: string, workflowId: string) {
  const proc: ChildProcess = spawn(
    process.execPath,
    ["--import", "tsx", path.join(here, "streaming-child.ts"), workflowId],
    {
      env: { ...process.env, TEMPORAL_ADDRESS: address },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const arrivals: Arrival[] = [];
  let buffer = "";
  let stderr = "";
  let first: () => void;
  const attached = new Promise<void>((r) => (first = r));
  proc.stdout!.on("data", (chunk: Buffer) => {
    buffer += chunk.toString();
    let at: number;
    while ((at = buffer.indexOf("\n")) >= 0) {
      const line = JSON.parse(buffer.slice(0, at));
      buffer = buffer.slice(at + 1);
      if (line.type) {
        arrivals.push(line);
        first();
      }
    }
  });
  proc.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    proc.on("error", reject);
    proc.on("exit", (code, signal) =>
      code === 0 || signal === "SIGKILL" ? resolve(code) : reject(new Error(`subscriber exited ${code}: ${stderr}`)),
    );
  });
  return { proc, arrivals, attached, exited };
}

/** The run's history bytes, and how many of them are worker identity strings (also the base of the sticky queue's name). */
async function historyBytes(bench: Bench, workflowId: string): Promise<{ bytes: number; identity: number }> {
  const events = (await bench.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  let identity = 0;
  for (const e of events)
    for (const [key, value] of Object.entries(e) as [string, any][]) {
      if (!key.endsWith("Attributes") || !value) continue;
      if (typeof value.identity === "string") identity += value.identity.length;
      if (value.taskQueue?.normalName) identity += value.taskQueue.name.length; // sticky queue: `<identity>-<uuid>`
    }
  return { bytes: events.reduce((n, e) => n + eventBytes(e), 0), identity };
}

/** Bytes the tap holds for a run (its private log; read for the bench only). */
const tapBytes = (service: RunEventsService, workflowId: string): { bytes: number; entries: number } => {
  const log = (service.tap as any).runs.get(workflowId);
  return { bytes: log?.bytes ?? 0, entries: log?.entries.length ?? 0 };
};

export async function streaming(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const script = streamingScript();
  const bulk = bulkScript();
  // Fed the same events as the small tap, never trimmed: what the run's log would be without the cap.
  const full = new EventTap({ maxRunBytes: Number.POSITIVE_INFINITY });
  // Provider-side stamps of each run's deltas, in order.
  const emitted = new Map<string, number[]>();
  const stamp = (event: AgentEvent, run: { workflowId: string }) => {
    if (event.type === "message_update") {
      const list = emitted.get(run.workflowId) ?? [];
      list.push(Date.now());
      emitted.set(run.workflowId, list);
    }
  };
  // One bearer token for both run servers, inherited by the subscribers (handle.events() sends JAI_HTTP_TOKEN).
  process.env.JAI_HTTP_TOKEN ||= randomBytes(24).toString("base64url");
  const service = await startRunEventsService({ client: bench.client, port: 0 });
  const small = await startRunEventsService({ client: bench.client, port: 0, tap: { maxRunBytes: SMALL_TAP_BYTES } });
  const common = { connection: bench.connection, tools: [script.tool], models: [script.model] };
  const workers: AgentWorker[] = [
    await createAgentWorker({ ...common, taskQueue: "bench-stream-off", events: false }),
    await createAgentWorker({
      ...common,
      taskQueue: "bench-stream-on",
      onEvent: (e, run) => {
        stamp(e, run);
        return service.onEvent(e, run);
      },
      workerOptions: { identity: service.identity },
    }),
    await createAgentWorker({
      ...common,
      models: [bulk],
      taskQueue: "bench-stream-small",
      onEvent: (e, run) => {
        full.append(run, e);
        return small.onEvent(e, run);
      },
      workerOptions: { identity: small.identity },
    }),
  ];
  const running = workers.map((w) => w.run());
  let n = 0;
  const start = (taskQueue: string, model = script.model) =>
    startAgentRun(bench.client, {
      taskQueue,
      workflowId: `${taskQueue}-${n++}-${Date.now()}`,
      model,
      prompt: "check the items",
      maxTurns: TURNS + 2,
    });
  const latencies: number[] = [];
  const rows: (string | number)[][] = [];
  let offPerTurn = 0;
  let uncapped = { bytes: 0, entries: 0 };
  const perTurns: number[] = [];
  try {
    // 1 + 2: history bytes per turn, and delta latency to the other process.
    for (const subscribers of [-1, 0, 1, 3, 10]) {
      const handle = await start(subscribers < 0 ? "bench-stream-off" : "bench-stream-on");
      const child = subscribers > 0 ? childSubscriber(bench.server.address, handle.workflowId) : undefined;
      const local = Array.from({ length: Math.max(0, subscribers - 1) }, async () => {
        let updates = 0;
        for await (const { event } of getAgentRun(bench.client, handle.workflowId).events())
          if (event.type === "message_update") updates++;
        return updates;
      });
      await handle.result();
      const localUpdates = await Promise.all(local);
      await child?.exited;
      const history = await historyBytes(bench, handle.workflowId);
      const perTurn = history.bytes / (TURNS + 1);
      if (subscribers === 10) uncapped = tapBytes(service, handle.workflowId);
      if (subscribers < 0) offPerTurn = perTurn;
      else perTurns.push(perTurn);
      const sent = emitted.get(handle.workflowId) ?? [];
      let live = "";
      if (child) {
        const received = child.arrivals.filter((a) => a.type === "message_update");
        if (received.length !== sent.length || localUpdates.some((u) => u !== sent.length))
          throw new Error(
            `deltas: worker ${sent.length}, other process ${received.length}, here ${localUpdates.join(",")}`,
          );
        const attachedAt = child.arrivals[0].t;
        const these = sent.flatMap((t, i) => (t > attachedAt ? [received[i].t - t] : []));
        latencies.push(...these);
        live = `${these.length} of ${sent.length}`;
      }
      rows.push([
        subscribers < 0 ? "off (plain worker)" : `on, ${subscribers} subscriber${subscribers === 1 ? "" : "s"}`,
        Math.round(perTurn),
        `${(perTurn / offPerTurn).toFixed(3)}×`,
        Math.round(history.identity / (TURNS + 1)),
        subscribers < 0 ? "—" : String(sent.length),
        live || "—",
      ]);
    }
    // 3: a subscriber process frozen (SIGSTOP: it stops reading) and one killed, against no
    // subscriber and against two healthy subscriber processes (which cost the same process start-up CPU on this
    // 2-core machine); rounds rotate the order, after a warm-up run; the tap capped at SMALL_TAP_BYTES.
    type Condition = "none" | "healthy" | "stalled";
    const durations: Record<Condition, number[]> = { none: [], healthy: [], stalled: [] };
    const order: Condition[][] = [
      ["none", "healthy", "stalled"],
      ["stalled", "none", "healthy"],
      ["healthy", "stalled", "none"],
    ];
    const plan: Condition[] = ["none", ...Array.from({ length: STALL_RUNS }, (_, r) => order[r % 3]).flat()];
    let peak = { bytes: 0, entries: 0 };
    let final = { bytes: 0, entries: 0 };
    let whole = { bytes: 0, entries: 0 };
    let stallDeltas = 0;
    for (const [i, condition] of plan.entries()) {
      const t0 = performance.now();
      const handle = await start("bench-stream-small", bulk);
      const children: ReturnType<typeof childSubscriber>[] = [];
      if (condition !== "none")
        children.push(
          childSubscriber(bench.server.address, handle.workflowId),
          childSubscriber(bench.server.address, handle.workflowId),
        );
      if (condition === "stalled") {
        const [frozen, gone] = children;
        void frozen.attached.then(() => frozen.proc.kill("SIGSTOP"));
        void gone.attached.then(() => gone.proc.kill("SIGKILL"));
      }
      const sampler = setInterval(() => {
        const now = tapBytes(small, handle.workflowId);
        if (now.bytes > peak.bytes) peak = now;
      }, 20);
      await handle.result();
      const ms = performance.now() - t0;
      clearInterval(sampler);
      if (i > 0) durations[condition].push(ms);
      final = tapBytes(small, handle.workflowId);
      const log = (full as any).runs.get(handle.workflowId);
      whole = { bytes: log.bytes, entries: log.entries.length };
      stallDeltas = log.entries.filter((e: any) => e.event.type === "message_update").length;
      if (condition === "stalled") for (const c of children) c.proc.kill("SIGKILL");
      await Promise.all(children.map((c) => c.exited));
    }
    const none = median(durations.none);
    const healthy = median(durations.healthy);
    const stalled = median(durations.stalled);
    const p50 = quantile(latencies, 0.5);
    const p99 = quantile(latencies, 0.99);
    const worst = Math.max(...perTurns.map((b) => b / offPerTurn));
    const spread = Math.max(...perTurns) - Math.min(...perTurns);
    const markdown = [
      `### Streaming: event tap + SSE (${TURNS} tool turns + the answer, faux model streaming text at ${TOKENS_PER_SECOND} tokens/s)`,
      "",
      table(
        [
          "streaming",
          "history bytes per turn",
          "vs off",
          "of which worker identity + sticky queue names",
          "deltas emitted",
          "live deltas timed (other process)",
        ],
        rows,
      ),
      "",
      table(
        ["token delta → subscriber in another process", "p50", "p99", "max", "deltas"],
        [
          [
            "provider stream yields → handle.events() in a child node process",
            `${p50} ms`,
            `${p99} ms`,
            `${Math.max(...latencies)} ms`,
            latencies.length,
          ],
        ],
      ),
      "",
      "Latency clocks: Date.now() in both processes on one machine; 2 cores shared with other jobs while measured.",
      "",
      table(
        ["slow / vanished subscriber", "value"],
        [
          [
            `bulk run (${TURNS} turns × ${BULK_TEXT / 1000} K chars streamed unthrottled): deltas, events as JSON`,
            `${stallDeltas}, ${(whole.bytes / 1024 / 1024).toFixed(2)} MB`,
          ],
          [
            `run duration, no subscriber (median of ${STALL_RUNS}; ${durations.none.map((d) => (d / 1000).toFixed(2)).join(", ")} s)`,
            `${(none / 1000).toFixed(2)} s`,
          ],
          [
            `run duration, two healthy subscriber processes (median of ${STALL_RUNS}; ${durations.healthy.map((d) => (d / 1000).toFixed(2)).join(", ")} s)`,
            `${(healthy / 1000).toFixed(2)} s (${(healthy / none).toFixed(3)}×)`,
          ],
          [
            `run duration, one subscriber process frozen + one killed (median of ${STALL_RUNS}; ${durations.stalled.map((d) => (d / 1000).toFixed(2)).join(", ")} s)`,
            `${(stalled / 1000).toFixed(2)} s (${(stalled / none).toFixed(3)}× none, ${(stalled / healthy).toFixed(3)}× healthy)`,
          ],
          [
            `tap bytes of the run, cap ${SMALL_TAP_BYTES / 1024} KB: peak sampled / at end / uncapped`,
            `${(peak.bytes / 1024).toFixed(0)} KB / ${(final.bytes / 1024).toFixed(0)} KB / ${(whole.bytes / 1024).toFixed(0)} KB`,
          ],
          ["tap entries at end, capped / uncapped", `${final.entries} / ${whole.entries}`],
          [
            "tap of the 10-subscriber run above (default 4 MB cap, nothing trimmed)",
            `${(uncapped.bytes / 1024).toFixed(1)} KB, ${uncapped.entries} entries`,
          ],
          ["extra infrastructure (embedded default)", "none: a loopback HTTP port in the worker process"],
        ],
      ),
    ].join("\n");
    return {
      markdown,
      goals: [
        `Streaming history bytes per turn ≤ 1.3× off, flat in subscribers: worst ${worst.toFixed(3)}× (1/3/10 subscribers differ by ${Math.round(spread)} B per turn) — ${worst <= 1.3 ? "met" : "MISSED"}`,
        `Token delta latency to another process p50 ≤ 150 ms, p99 ≤ 500 ms: ${p50} / ${p99} ms over ${latencies.length} deltas (loaded machine) — ${p50 <= 150 && p99 <= 500 ? "met" : "MISSED"}`,
        `A frozen + a killed subscriber vs two healthy ones: run duration ${(stalled / healthy).toFixed(3)}× (${(stalled / none).toFixed(3)}× no subscriber); tap peak ${(peak.bytes / 1024).toFixed(0)} KB with its ${SMALL_TAP_BYTES / 1024} KB delta cap (durable events are never trimmed) vs ${(whole.bytes / 1024).toFixed(0)} KB uncapped`,
      ],
    };
  } finally {
    for (const w of workers) w.shutdown();
    await Promise.all(running);
    await service.server.close();
    await small.server.close();
  }
}
