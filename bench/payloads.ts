/**
 * Large tool results (issue 56, docs/large-payloads.md): history bytes, time per turn and the blob store's bytes
 * of a run whose tool returns 1 MB, 5 MB and 20 MB results, with today's truncation (no store: each result cut to
 * 50 KB) against External Storage with the local folder driver and with the PostgreSQL driver (a throwaway
 * PostgreSQL on its own port, as the cluster suite starts one; skipped when PostgreSQL is not installed).
 */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { DataConverter } from "@temporalio/common";
import type proto from "@temporalio/proto";
import { startAgentRun } from "../src/client/client.js";
import { blobStorage } from "../src/node/blobs/config.js";
import { FileBlobDriver, PostgresBlobDriver, type BlobDriver } from "../src/node/blobs/drivers.js";
import { createAgentWorker } from "../src/worker/worker.js";
import { startPostgres, type Postgres } from "../test/support/cluster/postgres.js";
import { freeLowPort } from "../test/support/cluster/temporal-server.js";
import { eventBytes, mb, median, pageScript, table, type Bench } from "./common.js";
import { Client } from "@temporalio/client";

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const MB = 1024 * 1024;
/** Tool turns per run (then the answer). */
const TURNS = 3;
/** Timed runs per size and variant, after one warm-up. */
const RUNS = 2;
const SIZES = (process.env.JAI_BENCH_PAYLOAD_SIZES ?? "1,5,20").split(",").map(Number);

interface Variant {
  name: string;
  driver?: BlobDriver;
}

export async function payloadSizes(bench: Bench): Promise<{ markdown: string; goals: string[] }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "jai-bench-blobs-"));
  let pg: Postgres | undefined;
  const variants: Variant[] = [
    { name: "no store (cut to 50 KB)" },
    { name: "file store", driver: new FileBlobDriver(dir) },
  ];
  try {
    pg = startPostgres(await freeLowPort(new Set()));
    variants.push({
      name: "PostgreSQL store",
      driver: new PostgresBlobDriver(`postgres://${pg.user}@127.0.0.1:${pg.port}/postgres`),
    });
  } catch (err) {
    console.error(`payloads bench: no PostgreSQL (${(err as Error).message.split("\n")[0]}); file store only`);
  }
  const rows: string[][] = [];
  const results = new Map<string, { history: number; ms: number; stored: number }>();
  try {
    for (const [v, variant] of variants.entries()) {
      const dataConverter: DataConverter | undefined = variant.driver
        ? { externalStorage: blobStorage(variant.driver) }
        : undefined;
      const client = new Client({ connection: bench.client.connection, dataConverter });
      for (const size of SIZES) {
        const script = pageScript(`payloads-${v}-${size}`, TURNS, size * MB - 100, { runs: RUNS + 1 });
        const taskQueue = `bench-payloads-${v}-${size}`;
        const worker = await createAgentWorker({
          connection: bench.connection,
          taskQueue,
          tools: [script.tool],
          models: [script.model],
          workflowBundle: bench.bundle,
          dataConverter,
          events: false,
        });
        console.error(`payloads: ${size} MB, ${variant.name}`);
        const before = variant.driver ? (await variant.driver.stats()).bytes : 0;
        const times: number[] = [];
        let history = 0;
        await worker.runUntil(async () => {
          for (let i = 0; i < RUNS + 1; i++) {
            const workflowId = `payloads-${v}-${size}-${i}-${Date.now()}`;
            const t = Date.now();
            const handle = await startAgentRun(client, {
              taskQueue,
              workflowId,
              model: script.model,
              prompt: "read pages",
              maxTurns: TURNS + 1,
            });
            const result = await handle.result();
            if (result.stopReason !== "stop") throw new Error(`payloads bench: run ended ${result.stopReason}`);
            if (i === 0) continue;
            times.push((Date.now() - t) / (TURNS + 1));
            const events: Event[] = (await bench.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
            history = events.reduce((n, e) => n + eventBytes(e), 0);
          }
        });
        const stored = variant.driver ? ((await variant.driver.stats()).bytes - before) / (RUNS + 1) : 0;
        const ms = median(times);
        results.set(`${v}/${size}`, { history, ms, stored });
        rows.push([`${size} MB`, variant.name, mb(history), ms.toFixed(0), variant.driver ? mb(stored) : "-"]);
      }
    }
  } finally {
    await Promise.allSettled(variants.map((v) => v.driver?.close()));
    pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const markdown = [
    `### Large tool results: a run of ${TURNS} tool turns, each result 1, 5 or 20 MB of text (median of ${RUNS} runs after a warm-up)`,
    "",
    "Without a store each result is cut to 50 KB with a note (what history can hold); with one it is kept whole",
    "(up to 20 MB), history holding a claim, the model seeing the first 50 KB. The store's bytes are per run.",
    "",
    table(["result", "variant", "history", "ms per turn", "store bytes per run"], rows),
  ].join("\n");
  const file5 = results.get("1/5");
  const goals = file5
    ? [
        `history of a run with three 5 MB results, file store: ${mb(file5.history)} (goal < 1 MB): ${file5.history < MB ? "met" : "NOT met"}`,
      ]
    : [];
  return { markdown, goals };
}
