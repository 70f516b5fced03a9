/**
 * Encryption's cost: history bytes and time per turn with no codec, the
 * AES-256-GCM codec, and the codec with deflate before encryption, on the
 * history-growth bench's transcript (8 KB pages of one repeated letter) and on
 * pages of real text (this repository's sources).
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@temporalio/client";
import type { DataConverter } from "@temporalio/common";
import type proto from "@temporalio/proto";
import { startAgentRun } from "../src/client/client.js";
import { AesGcmCodec } from "../src/node/codec/aes-gcm.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { createAgentWorker } from "../src/worker/worker.js";
import { eventBytes, mb, median, pageScript, table, type Bench } from "./common.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const TURNS = 30;
const TIMED_TURNS = 20;
const RUNS = 3;
const PAGE = 8000;
const here = path.dirname(fileURLToPath(import.meta.url));

function sourceText(): string {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith(".ts")) files.push(file);
    }
  };
  walk(path.join(here, "../src"));
  return files
    .sort()
    .map((f) => readFileSync(f, "utf8"))
    .join("\n");
}

async function chainBytes(client: Client, workflowId: string): Promise<number> {
  let bytes = 0;
  for (let runId: string | undefined = undefined, first = true; first || runId; first = false) {
    const events: Event[] = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    bytes += events.reduce((n, e) => n + eventBytes(e), 0);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return bytes;
}

export async function codecCost(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const key = { id: "bench", key: Buffer.alloc(32, 3) };
  const variants: { name: string; dataConverter?: DataConverter }[] = [
    { name: "no codec" },
    { name: "AES-256-GCM" },
    { name: "AES-256-GCM + deflate" },
  ];
  variants[1].dataConverter = { payloadCodecs: [new AesGcmCodec({ keys: [key] })] };
  variants[2].dataConverter = { payloadCodecs: [new AesGcmCodec({ keys: [key], compress: true })] };
  const text = sourceText();
  const contents = [
    { name: "8 KB pages of one letter (history-growth transcript)", page: () => "p".repeat(PAGE) },
    {
      name: "8 KB pages of real text (this repo's sources)",
      page: (n: number) => text.slice((n * PAGE) % (text.length - PAGE), ((n * PAGE) % (text.length - PAGE)) + PAGE),
    },
  ];
  const bytes = new Map<string, number>();
  const perTurn = new Map<string, number[]>();
  for (const [v, variant] of variants.entries()) {
    const client = new Client({ connection: bench.client.connection, dataConverter: variant.dataConverter });
    for (const [c, content] of contents.entries()) {
      const script = pageScript(`codec-${v}-${c}`, TURNS, 0);
      const timed = pageScript(`codec-timed-${v}-${c}`, TIMED_TURNS, 0, { runs: RUNS + 1 });
      const tool: AgentTool = {
        ...script.tool,
        execute: async (_id, args: any) => ({
          content: [{ type: "text", text: `page ${args.n}: ${content.page(args.n)}` }],
        }),
      };
      const taskQueue = `bench-codec-${v}-${c}`;
      const worker = await createAgentWorker({
        connection: bench.connection,
        taskQueue,
        tools: [tool],
        models: [script.model, timed.model],
        workflowBundle: bench.bundle,
        dataConverter: variant.dataConverter,
      });
      await worker.runUntil(async () => {
        const sized = await startAgentRun(client, {
          taskQueue,
          workflowId: `codec-size-${v}-${c}-${Date.now()}`,
          model: script.model,
          prompt: "read pages",
          maxTurns: TURNS + 1,
        });
        await sized.result();
        bytes.set(`${v}/${c}`, await chainBytes(bench.client, sized.workflowId));
        if (c !== 1) return; // time on the real-text pages only
        const times: number[] = [];
        for (let i = 0; i < RUNS + 1; i++) {
          const t = Date.now();
          const handle = await startAgentRun(client, {
            taskQueue,
            workflowId: `codec-time-${v}-${i}-${Date.now()}`,
            model: timed.model,
            prompt: "read pages",
            maxTurns: TIMED_TURNS + 1,
          });
          await handle.result();
          if (i > 0) times.push((Date.now() - t) / (TIMED_TURNS + 1));
        }
        perTurn.set(String(v), times);
      });
    }
  }
  const base = (c: number) => bytes.get(`0/${c}`)!;
  const rows = contents.flatMap((content, c) =>
    variants.map((variant, v) => [
      content.name,
      variant.name,
      mb(bytes.get(`${v}/${c}`)!),
      `${(bytes.get(`${v}/${c}`)! / base(c)).toFixed(2)}×`,
    ]),
  );
  const timeRows = variants.map((variant, v) => {
    const ms = median(perTurn.get(String(v))!);
    return [variant.name, ms.toFixed(1), `${(ms / median(perTurn.get("0")!)).toFixed(2)}×`];
  });
  const markdown = [
    `### Encryption (payload codec): history bytes of a ${TURNS}-turn run (one ${PAGE / 1000} KB tool result a turn)`,
    "",
    table(["tool results", "codec", "history", "vs no codec"], rows),
    "",
    `Time per turn (real-text pages, ${TIMED_TURNS} turns + the answer, median of ${RUNS} runs after a warm-up):`,
    "",
    table(["codec", "ms per turn", "vs no codec"], timeRows),
  ].join("\n");
  const aes = median(perTurn.get("1")!) / median(perTurn.get("0")!);
  const packed = bytes.get("2/1")! / base(1);
  return {
    markdown,
    goals: [
      `AES-256-GCM time per turn vs no codec: ${aes.toFixed(2)}× (goal ≤ 1.20×): ${aes <= 1.2 ? "met" : "NOT met"}`,
      `deflate + AES-256-GCM history on real text: ${packed.toFixed(2)}× of no codec (goal < 1.00×): ${packed < 1 ? "met" : "NOT met"}`,
    ],
  };
}
