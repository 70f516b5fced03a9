/**
 * `npm run replay -- <workflowId>` or `npm run replay -- --file history.json`:
 * replays a run's history against the current workflow code. Exit 0 when
 * deterministic, 1 on a divergence, 2 when there is nothing to judge (bad
 * usage; a file that cannot be read; a history that is empty or not an agent
 * run's), with a message naming the file or workflow and why.
 */
import path from "node:path";
import { DefaultLogger, Runtime } from "@temporalio/worker";
import { bundleAgentWorkflows } from "../worker.js";
import { flag, connectClient } from "./connect.js";
import { codecFromEnv } from "../codec/config.js";
import { CodecKeyError } from "../codec/aes-gcm.js";
import { decodeHistoryPayloads, encryptedKeyIds } from "../codec/history.js";
import { checkAgentHistory, readHistoryFile, replayHistory, ReplayInputError, type History } from "../replay.js";

const USAGE =
  "usage: npm run replay -- <workflowId> [--run-id ID] [--address host:port] [--workflows path]\n" +
  "       npm run replay -- --file history.json [--workflows path]\n" +
  "--workflows replays against another workflows module (e.g. a changed loop) instead of this project's.\n" +
  "Encrypted histories are decrypted with JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE.";

async function main(): Promise<number> {
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const args = process.argv.slice(2);
  const file = flag(args, "--file");
  const workflowId = args.find((a, i) => !a.startsWith("--") && !args[i - 1]?.startsWith("--"));
  if (!file && !workflowId) {
    console.error(USAGE);
    return 2;
  }
  const source = file ?? `workflow ${workflowId}`;
  let history: History;
  if (file) history = await readHistoryFile(file);
  else {
    const { client, close } = await connectClient(args);
    try {
      history = await client.workflow.getHandle(workflowId!, flag(args, "--run-id")).fetchHistory();
    } catch (err) {
      throw new ReplayInputError(
        source,
        `cannot fetch its history (${err instanceof Error ? err.message : String(err)})`,
      );
    } finally {
      await close();
    }
  }
  // Replay feeds payloads to the workflow code: decrypt them as the workers would (a missing key is named here).
  const codec = codecFromEnv();
  if (codec) {
    try {
      history = await decodeHistoryPayloads(history, [codec]);
    } catch (err) {
      if (err instanceof CodecKeyError) throw new ReplayInputError(source, `cannot decrypt it: ${err.message}`);
      throw err;
    }
  }
  // Encrypted payloads the workflow code cannot read would show as a divergence: say what is missing instead.
  const sealed = encryptedKeyIds(history);
  if (sealed.length)
    throw new ReplayInputError(
      source,
      `its payloads are encrypted (key ${sealed.map((k) => `"${k}"`).join(", ")}): set JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE`,
    );
  checkAgentHistory(history, source); // before bundling: nothing to replay
  const workflows = flag(args, "--workflows");
  const outcome = await replayHistory(
    history,
    workflowId ?? "replay",
    workflows ? await bundleAgentWorkflows(path.resolve(workflows)) : undefined,
  );
  if (!outcome.error) {
    console.log(`replayed ${outcome.events} events: deterministic`);
    return 0;
  }
  const where =
    outcome.error.eventId !== undefined ? ` at event ${outcome.error.eventId} (${outcome.error.event})` : "";
  console.error(
    `replay of ${outcome.events} events diverged${where}${outcome.error.nondeterminism ? " (nondeterminism)" : ""}:\n${outcome.error.message}`,
  );
  return 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(
      err instanceof ReplayInputError
        ? `cannot replay ${err.message}`
        : `replay failed: ${err instanceof Error ? err.message : String(err)}`,
    );
    process.exit(2);
  },
);
