/**
 * `npm run bench`: every benchmark against a fresh dev server, printed and
 * written to docs/benchmarks.md. `npm run bench -- growth parallel` runs a subset
 * (and prints it without writing the report); `--scale-*` flags size the scale bench (see scale.ts).
 */
import { writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { codecCost } from "./codec.js";
import { openBench } from "./common.js";
import { finishedChain } from "./finished-chain.js";
import { historyGrowth } from "./history-growth.js";
import { observability } from "./observability.js";
import { overhead } from "./overhead.js";
import { parallelTools } from "./parallel.js";
import { scale } from "./scale.js";
import { streaming } from "./streaming.js";
import { throughput } from "./throughput.js";

const SECTIONS = { growth: historyGrowth, overhead, observability, parallel: parallelTools, throughput, finished: finishedChain, codec: codecCost, scale, streaming };

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((a) => a in SECTIONS) as (keyof typeof SECTIONS)[];
  const names = wanted.length ? wanted : (Object.keys(SECTIONS) as (keyof typeof SECTIONS)[]);
  const bench = await openBench();
  const parts: string[] = [];
  const goals: string[] = [];
  try {
    for (const name of names) {
      console.error(`running ${name}...`);
      const out = await SECTIONS[name](bench);
      console.log(`${out.markdown}\n`);
      parts.push(out.markdown);
      goals.push(...out.goals);
    }
  } finally {
    await bench.close();
  }
  console.log(`Goals:\n${goals.map((g) => `- ${g}`).join("\n")}`);
  if (wanted.length) return; // a subset does not overwrite the full report
  const doc = [
    "# Benchmarks",
    "",
    `Made by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}, Temporal CLI dev server (SQLite), faux model (no network).`,
    "",
    ...parts.flatMap((p) => [p, ""]),
    "## Goals",
    "",
    ...goals.map((g) => `- ${g}`),
    "",
  ].join("\n");
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../docs/benchmarks.md");
  await writeFile(file, doc);
  console.error(`wrote ${file}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
