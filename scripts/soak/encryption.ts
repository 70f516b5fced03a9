/**
 * Encrypted runs: every soak run goes through the project's payload codec (AES-256-GCM, JAI_CODEC_KEYS), the
 * workers' as configured from the environment and the soak client's from the same key. The run checks already go
 * through that client, so they compare the decoded transcript with the expected one; this file adds what only
 * the raw history can show: read over gRPC with no codec, none of a run's text is in it in plain.
 *
 * Per run, every history of its chain (the latest run, then back through each run's continued-from run id):
 * each payload is `binary/encrypted`, but for the ones plain by design (search attributes, which the server
 * indexes; the SDK core's own marker data, a patch's id and a local activity's bookkeeping, which it reads back
 * on replay with no codec), and the history's wire bytes hold none of the run's texts (its prompts, the model's
 * answers, the tool results, as the decoded transcript has them) nor the script marker every prompt starts with:
 * that search covers the plain-by-design payloads, and ids and names too.
 *
 * The soak's payloads of 4 KB and more are in the PostgreSQL blob store (JAI_BLOB_STORE, docs/large-payloads.md):
 * history holds a claim for each (plain by design: the blob's hash, its run, its size), and each claim's blob, read
 * from the store, must be `binary/encrypted` and hold none of the run's texts either.
 */
import type { Connection } from "@temporalio/client";
import type { DataConverter, ExternalStorage, Payload } from "@temporalio/common";
import { isReferencePayload } from "@temporalio/common/lib/internal-non-workflow/extstore-helpers.js";
import { resolvePayloadClaims } from "../../src/node/blobs/config.js";
import proto from "@temporalio/proto";
import { dataConverterFromEnv, newCodecKey } from "../../src/node/codec/config.js";
import { ENCRYPTED_ENCODING } from "../../src/node/codec/aes-gcm.js";
import { SCRIPT_PREFIX } from "./script-model.js";
import { retry, type RunRecord } from "./workload.js";

type History = proto.temporal.api.history.v1.IHistory;

/** A fresh key for this soak: the workers get it as JAI_CODEC_KEYS, the client's converter is made from it. */
export function soakCodec(): { keys: string; dataConverter: DataConverter } {
  const keys = newCodecKey("soak");
  return { keys, dataConverter: dataConverterFromEnv({ JAI_CODEC_KEYS: keys })! };
}

/** The marker every prompt starts with (`SOAK {"id":`): never in a raw history. */
const MARKER = `${SCRIPT_PREFIX}{"id":`;
/** Shorter texts could match ids by chance; every soak text worth looking for is longer. */
const MIN_NEEDLE = 12;

/** Payloads written plain by design: where they sit, as `payloads` names it. */
const PLAIN_BY_DESIGN = /searchAttributes|markerRecordedEventAttributes\.details\.(patch-data|data)\.payloads$/;

/** Every payload in a history, with where it sits. */
function payloads(value: unknown, at: string, out: { at: string; p: Payload }[]): void {
  if (typeof value !== "object" || value === null || value instanceof Uint8Array) return;
  const v = value as { metadata?: Record<string, Uint8Array>; data?: unknown };
  if (v.metadata && typeof v.metadata === "object" && "encoding" in v.metadata) {
    out.push({ at, p: v as Payload });
    return;
  }
  for (const [k, child] of Object.entries(value)) payloads(child, /^\d+$/.test(k) ? at : `${at}.${k}`, out);
}

/** The run's histories, newest first, raw (the gRPC service: no data converter, no codec). */
async function chain(connection: Connection, workflowId: string, lastRunId: string): Promise<History[]> {
  const out: History[] = [];
  for (let runId: string | undefined = lastRunId; runId && out.length < 50; ) {
    const events: proto.temporal.api.history.v1.IHistoryEvent[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await connection.workflowService.getWorkflowExecutionHistory({
        namespace: "default",
        execution: { workflowId, runId },
        nextPageToken,
      });
      events.push(...(page.history?.events ?? []));
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken);
    out.push({ events });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  return out;
}

export interface EncryptionReport {
  runs: number;
  histories: number;
  payloads: number;
  /** Bytes of raw history searched, and texts looked for. */
  bytes: number;
  /** Claims found in history (payloads in the blob store), and bytes of their blobs searched. */
  claims: number;
  storedBytes: number;
  needles: number;
  violations: { run: string; what: string }[];
}

export async function checkEncryption(
  connection: Connection,
  runs: RunRecord[],
  /** The blob store the runs' claims point into. */
  storage?: ExternalStorage,
): Promise<EncryptionReport> {
  const report: EncryptionReport = {
    runs: 0,
    histories: 0,
    payloads: 0,
    bytes: 0,
    needles: 0,
    claims: 0,
    storedBytes: 0,
    violations: [],
  };
  const one = async (run: RunRecord) => {
    if (!run.messages || !run.finalRunId) return;
    const texts = new Set<string>([MARKER]);
    for (const m of run.messages) {
      const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
      const text = content.map((b) => (b.type === "text" ? b.text : "")).join("");
      if (text.length >= MIN_NEEDLE) texts.add(text);
    }
    // Each as it is and as a JSON string holds it (quotes and new lines escaped): a plain json/plain payload
    // of the prompt has `SOAK {\"id\":…`, which the bare text would miss.
    const needles = [...new Set([...texts].flatMap((t) => [t, JSON.stringify(t).slice(1, -1)]))].map((t) =>
      Buffer.from(t, "utf8"),
    );
    const histories = await retry(`raw history ${run.id}`, () => chain(connection, run.id, run.finalRunId!));
    report.runs++;
    report.needles += needles.length;
    for (const [i, history] of histories.entries()) {
      report.histories++;
      const bytes = Buffer.from(proto.temporal.api.history.v1.History.encode(history).finish());
      report.bytes += bytes.length;
      const found = needles.filter((n) => bytes.includes(n));
      const where = i === 0 ? "its last run" : `its run ${i} before the last`;
      if (found.length)
        report.violations.push({
          run: run.id,
          what: `plaintext in the raw history of ${where}: ${found.map((n) => JSON.stringify(n.toString("utf8").slice(0, 80))).join(", ")}`,
        });
      const all: { at: string; p: Payload }[] = [];
      payloads(history.events, "events", all);
      const claims = all.filter(({ p }) => isReferencePayload(p));
      report.claims += claims.length;
      if (claims.length && !storage)
        report.violations.push({ run: run.id, what: `${claims.length} blob-store claims and no store to check` });
      if (claims.length && storage) {
        const stored = await retry(`stored payloads of ${run.id}`, () =>
          resolvePayloadClaims(
            claims.map(({ p }) => p),
            storage,
          ),
        );
        for (const p of stored) {
          const blob = Buffer.from(p.data ?? []);
          report.storedBytes += blob.length;
          const leaked = needles.filter((n) => blob.includes(n));
          if (Buffer.from(p.metadata?.encoding ?? []).toString() !== ENCRYPTED_ENCODING || leaked.length)
            report.violations.push({
              run: run.id,
              what: `a payload in the blob store is not encrypted or holds the run's text (${where})`,
            });
        }
      }
      const plain = all.filter(
        ({ at, p }) =>
          !PLAIN_BY_DESIGN.test(at) &&
          !isReferencePayload(p) &&
          Buffer.from(p.metadata?.encoding ?? []).toString() !== ENCRYPTED_ENCODING,
      );
      report.payloads += all.length;
      if (plain.length)
        report.violations.push({
          run: run.id,
          what: `${plain.length} payloads not encrypted in ${where}, at ${[...new Set(plain.map((x) => x.at))].slice(0, 5).join(", ")}`,
        });
    }
  };
  // A few at a time: the cluster is still up, on a shared 2-core machine.
  const queue = runs.slice();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      for (let run = queue.shift(); run; run = queue.shift())
        await one(run).catch((err: unknown) =>
          report.violations.push({ run: run!.id, what: `raw history not read: ${String(err).slice(0, 300)}` }),
        );
    }),
  );
  return report;
}
