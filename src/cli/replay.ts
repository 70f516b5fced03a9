/**
 * `npm run replay -- <workflowId>` or `npm run replay -- --file history.json`:
 * replays a run's history against the current workflow code. Exit 0 when
 * deterministic, 1 on a divergence, 2 on bad usage.
 */
import path from "node:path";
import { DefaultLogger, Runtime } from "@temporalio/worker";
import { bundleAgentWorkflows } from "../worker.js";
import { flag, connectClient } from "./connect.js";
import { readHistoryFile, replayHistory, type History } from "../replay.js";

const USAGE =
  "usage: npm run replay -- <workflowId> [--run-id ID] [--address host:port] [--workflows path]\n" +
  "       npm run replay -- --file history.json [--workflows path]\n" +
  "--workflows replays against another workflows module (e.g. a changed loop) instead of this project's.";

async function main(): Promise<number> {
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const args = process.argv.slice(2);
  const file = flag(args, "--file");
  const workflowId = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
  if (!file && !workflowId) {
    console.error(USAGE);
    return 2;
  }
  let history: History;
  if (file) history = await readHistoryFile(file);
  else {
    const { client, close } = await connectClient(args);
    try {
      history = await client.workflow.getHandle(workflowId!, flag(args, "--run-id")).fetchHistory();
    } finally {
      await close();
    }
  }
  const workflows = flag(args, "--workflows");
  const outcome = await replayHistory(history, workflowId ?? "replay", workflows ? await bundleAgentWorkflows(path.resolve(workflows)) : undefined);
  if (!outcome.error) {
    console.log(`replayed ${outcome.events} events: deterministic`);
    return 0;
  }
  const where = outcome.error.eventId !== undefined ? ` at event ${outcome.error.eventId} (${outcome.error.event})` : "";
  console.error(`replay of ${outcome.events} events diverged${where}${outcome.error.nondeterminism ? " (nondeterminism)" : ""}:\n${outcome.error.message}`);
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  },
);
