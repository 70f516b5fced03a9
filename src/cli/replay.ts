/**
 * `npm run replay -- <workflowId>` or `npm run replay -- --file history.json`:
 * replays a run's history against the current workflow code. Exit 0 when
 * deterministic, 1 on a divergence (one line: what diverged, at which event),
 * 2 when there is nothing to judge (bad usage; a file that cannot be read; a
 * history that is empty or not an agent run's; a run with sub-agents whose
 * workflow id neither the file nor --workflow-id gives), with a message naming
 * the file or workflow and why. docs/replay.md walks through it.
 */
import path from "node:path";
import { argumentsOrExit, debugWanted, describeFailure, parseCli, UsageError } from "./program.js";
import { DefaultLogger, Runtime } from "@temporalio/worker";
import { bundleAgentWorkflows } from "../worker/worker.js";
import { withCliClient } from "./connect.js";
import { codecFromEnv } from "../node/codec/config.js";
import { blobStorageFromEnv, BlobStoreNotConfiguredError } from "../node/blobs/config.js";
import { BlobNotFoundError } from "../node/blobs/drivers.js";
import { CodecKeyError } from "../node/codec/aes-gcm.js";
import { decodeHistoryPayloads, encryptedKeyIds } from "../node/codec/history.js";
import {
  checkAgentHistory,
  divergenceLine,
  historyWorkflowId,
  readHistoryFile,
  replayHistory,
  ReplayInputError,
  type History,
} from "../worker/replay.js";

const USAGE =
  "usage: npm run replay -- <workflowId> [--run-id ID] [--address host:port] [--workflows path]\n" +
  "       npm run replay -- --file history.json [--workflow-id ID] [--workflows path]\n" +
  "--file takes the Temporal UI's download or `temporal workflow show --output json`; the run's workflow id is\n" +
  "read from it, or given with --workflow-id (a run with sub-agents replays only under its own).\n" +
  "--workflows replays against another workflows module (e.g. a changed loop) instead of this project's.\n" +
  "Encrypted histories are decrypted with JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE. See docs/replay.md.";

async function main(): Promise<number> {
  // Core's own warnings repeat the divergence once per replay attempt (locating it replays several prefixes): the
  // command prints it once, in one line.
  Runtime.install({
    logger: new DefaultLogger("WARN"),
    telemetryOptions: { logging: { filter: { core: "ERROR", other: "ERROR" } } },
  });
  const file = values.file;
  // The run's id, either way: for a live run the one to fetch, for a file the one to replay under.
  const given = values["workflow-id"] ?? positionals[0];
  const workflowId = file ? undefined : given;
  const source = file ?? `workflow ${workflowId}`;
  let history: History = file
    ? await readHistoryFile(file)
    : await withCliClient({ address: values.address, namespace: values.namespace }, (client) =>
        client.workflow
          .getHandle(workflowId!, values["run-id"])
          .fetchHistory()
          .catch((err: unknown) => {
            throw new ReplayInputError(
              source,
              `cannot fetch its history (${err instanceof Error ? err.message : String(err)})`,
            );
          }),
      );
  // Replay feeds payloads to the workflow code: read claims from the blob store (JAI_BLOB_STORE) and decrypt them
  // as the workers would (a missing key, store or blob is named here).
  const codec = codecFromEnv();
  try {
    history = await decodeHistoryPayloads(history, codec ? [codec] : [], blobStorageFromEnv());
  } catch (err) {
    if (err instanceof CodecKeyError) throw new ReplayInputError(source, `cannot decrypt it: ${err.message}`);
    if (err instanceof BlobNotFoundError || err instanceof BlobStoreNotConfiguredError)
      throw new ReplayInputError(source, `cannot read its stored payloads: ${err.message}`);
    throw err;
  }
  // Encrypted payloads the workflow code cannot read would show as a divergence: say what is missing instead.
  const sealed = encryptedKeyIds(history);
  if (sealed.length)
    throw new ReplayInputError(
      source,
      `its payloads are encrypted (key ${sealed.map((k) => `"${k}"`).join(", ")}): set JAI_CODEC_KEYS or JAI_CODEC_KEY_FILE`,
    );
  checkAgentHistory(history, source); // before bundling: nothing to replay
  // The id the run replays under: sub-agents' ids derive from it, so a run that started some needs its own.
  const recorded = historyWorkflowId(history);
  const replayId = given ?? recorded.workflowId;
  if (!replayId && recorded.needed)
    throw new ReplayInputError(
      source,
      "the history does not say its workflow id, and the ids of the sub-agents it started derive from it: pass --workflow-id <the run's workflow id>",
    );
  const outcome = await replayHistory(
    history,
    replayId ?? "replay",
    values.workflows ? await bundleAgentWorkflows(path.resolve(values.workflows)) : undefined,
  );
  if (!outcome.error) {
    console.log(divergenceLine(outcome));
    return 0;
  }
  // Told an id the history contradicts: say so on the same line, it is the likely cause.
  const other =
    given && recorded.workflowId && given !== recorded.workflowId && recorded.needed
      ? ` (replayed as workflow "${given}"; ${recorded.from} says "${recorded.workflowId}")`
      : "";
  console.error(divergenceLine(outcome) + other);
  return 1;
}

// --help, or a mistake in the arguments, before anything runs: the usage (src/cli/program.ts).
const { values, positionals } = argumentsOrExit(USAGE, () => {
  const parsed = parseCli(process.argv.slice(2), {
    file: { type: "string" },
    "run-id": { type: "string" },
    address: { type: "string" },
    namespace: { type: "string" },
    workflows: { type: "string" },
    "workflow-id": { type: "string" },
  });
  if (!parsed.positionals[0] && !parsed.values.file)
    throw new UsageError("missing <workflowId> (or --file history.json)");
  return { values: parsed.values as Record<string, string | undefined>, positionals: parsed.positionals };
});

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(
      err instanceof ReplayInputError ? `cannot replay ${err.message}` : `replay failed: ${describeFailure(err).text}`,
    );
    if (debugWanted() && err instanceof Error) console.error(err.stack);
    process.exit(2);
  },
);
