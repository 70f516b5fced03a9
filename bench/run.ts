/**
 * `npm run bench`: every benchmark against a fresh dev server, printed and
 * written to docs/benchmarks.md. `npm run bench -- growth parallel` runs a subset
 * (and prints it without writing the report); `--scale-*` flags size the scale bench (see scale.ts);
 * `npm run bench -- kill-stall` measures what a SIGKILLed worker costs its runs (kill-stall-bench.ts);
 * `npm run bench -- cancel` how fast a cancel reaches a streaming model call and a running tool (cancel.ts);
 * `npm run bench -- deploy` how long a deploy through Worker Deployment Versioning takes to drain (deploy.ts);
 * `npm run bench -- payloads`: large tool results with and without a blob store (payloads.ts);
 * `--peers` adds the side-by-side comparison with Temporal's AI SDK integration
 * (installed on first use into ~/.cache/jai-bench-peers), `npm run bench -- --peers peers` runs only that.
 */
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cancelLatency } from "./cancel.js";
import { codecCost } from "./codec.js";
import { consoleList } from "./console.js";
import { deploy } from "./deploy.js";
import { openBench } from "./common.js";
import { budgetOverhead } from "./budget-overhead.js";
import { fairness } from "./fairness.js";
import { finishedChain } from "./finished-chain.js";
import { historyGrowth } from "./history-growth.js";
import { killStall } from "./kill-stall-bench.js";
import { observability } from "./observability.js";
import { overhead } from "./overhead.js";
import { parallelTools } from "./parallel.js";
import { payloadSizes } from "./payloads.js";
import { replayCost } from "./replay.js";
import { scale } from "./scale.js";
import { streaming } from "./streaming.js";
import { throughput } from "./throughput.js";
import { versus, VS_PHASES } from "./versus.js";

const PEERS_START = "<!-- peers: npm run bench -- --peers peers -->";
const PEERS_END = "<!-- /peers -->";

const SECTIONS = {
  growth: historyGrowth,
  overhead,
  budgets: budgetOverhead,
  observability,
  parallel: parallelTools,
  throughput,
  finished: finishedChain,
  codec: codecCost,
  replay: replayCost,
  scale,
  "kill-stall": killStall,
  cancel: cancelLatency,
  deploy,
  streaming,
  console: consoleList,
  fairness,
  payloads: payloadSizes,
  peers: versus,
};

async function main(): Promise<void> {
  const wanted = process.argv.slice(2).filter((a) => a in SECTIONS) as (keyof typeof SECTIONS)[];
  const peers = process.argv.includes("--peers");
  const names = wanted.length
    ? wanted
    : (Object.keys(SECTIONS) as (keyof typeof SECTIONS)[]).filter((n) => peers || n !== "peers");
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
  const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../docs/benchmarks.md");
  if (wanted.length === 1 && wanted[0] === "peers" && !VS_PHASES) {
    // The side-by-side section alone replaces its part of the report (it runs long; the rest stays as measured).
    const doc = await readFile(file, "utf8");
    const block = `${PEERS_START}\n${parts[0]}\n\nGoals of this comparison (${new Date().toISOString().slice(0, 10)}):\n\n${goals.map((g) => `- ${g}`).join("\n")}\n${PEERS_END}`;
    const at = doc.indexOf(PEERS_START);
    const next =
      at >= 0
        ? doc.slice(0, at) + block + doc.slice(doc.indexOf(PEERS_END) + PEERS_END.length)
        : doc.replace("## Goals", `${block}\n\n## Goals`);
    await writeFile(file, next);
    console.error(`updated ${file}`);
    return;
  }
  if (wanted.length) return; // a subset does not overwrite the full report
  const doc = [
    "# Benchmarks",
    "",
    `Made by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}, ${os.cpus().length} cores, Node ${process.version}, Temporal CLI dev server (SQLite), faux model (no network).`,
    "",
    "Current figures at a glance: [sizing.md](sizing.md#current-figures-at-a-glance). Dated bench logs: [lab/benchmarks-log.md](lab/benchmarks-log.md) and [lab/scaling.md](lab/scaling.md).",
    "",
    ...parts.flatMap((p) => [p, ""]),
    "## Goals",
    "",
    ...goals.map((g) => `- ${g}`),
    "",
  ].join("\n");
  await writeFile(file, doc);
  console.error(`wrote ${file}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
