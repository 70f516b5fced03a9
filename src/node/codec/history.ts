/**
 * Decoding a whole history through a data converter's codecs, so code that
 * reads payloads itself (show, the closed-run view, replay of a file) sees
 * what the workflow saw, whatever codec (encryption, compression) wrote it.
 */
import type { ExternalStorage, LoadedDataConverter, Payload, PayloadCodec } from "@temporalio/common";
import type { temporal } from "@temporalio/proto";
import { ENCRYPTED_ENCODING, KEY_ID_METADATA } from "./aes-gcm.js";
import { resolveHistoryClaims, walkObjects } from "../blobs/config.js";

type History = temporal.api.history.v1.IHistory;

const isPayload = (value: unknown): value is Payload => {
  const v = value as { metadata?: unknown; data?: unknown } | null;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof v.metadata === "object" &&
    v.metadata !== null &&
    "encoding" in (v.metadata as object) &&
    (v.data == null || v.data instanceof Uint8Array)
  );
};

/** Every payload in `value`, wherever it sits (inputs, results, update args, memo, headers, user metadata, failure details). */
function collectPayloads(value: unknown): Payload[] {
  const out: Payload[] = [];
  walkObjects(value, (v) => isPayload(v) && out.push(v) > 0);
  return out;
}

/** `payloads` decoded with `codecs`, applied last to first as Temporal does (the payloads are left as they are). */
export async function decodePayloads(payloads: Payload[], codecs: PayloadCodec[]): Promise<Payload[]> {
  let decoded: Payload[] = payloads.map((p) => ({ metadata: p.metadata, data: p.data }));
  for (const codec of [...codecs].reverse()) decoded = await codec.decode(decoded);
  return decoded;
}

/**
 * Decodes every payload of `history` in place with `codecs` (applied last to first, as Temporal does) and returns
 * it; failures written with encoded common attributes (see `withEncryptedFailures`) get their message and stack
 * trace back, as Temporal's failure converter gives them to the workflow.
 */
export async function decodeHistoryPayloads<H extends History>(
  history: H,
  codecs: PayloadCodec[],
  /** The blob store of its claims (External Storage): each is replaced by its payload first. */
  externalStorage?: ExternalStorage,
): Promise<H> {
  await resolveHistoryClaims(history, externalStorage);
  const payloads = codecs.length > 0 ? collectPayloads(history.events) : [];
  if (payloads.length > 0) {
    const decoded = await decodePayloads(payloads, codecs);
    payloads.forEach((p, i) => {
      p.metadata = decoded[i].metadata;
      p.data = decoded[i].data;
    });
  }
  restoreFailureAttributes(history.events);
  return history;
}

type Failure = temporal.api.failure.v1.IFailure;

/** Failures (and their causes) anywhere in `value`: objects with an `encodedAttributes` payload. */
function collectFailures(value: unknown): Failure[] {
  const out: Failure[] = [];
  walkObjects(value, (v) => {
    if (isPayload(v)) return true;
    const f = v as Failure;
    if (f.encodedAttributes && isPayload(f.encodedAttributes)) out.push(f);
  });
  return out;
}

/** Sets each failure's message and stack trace from its decoded (JSON) `encodedAttributes`, as the SDK does. */
function restoreFailureAttributes(events: History["events"]): void {
  for (const failure of collectFailures(events)) {
    const { metadata, data } = failure.encodedAttributes!;
    if (!data || Buffer.from(metadata?.encoding ?? []).toString("utf8") !== "json/plain") continue; // still sealed
    let attrs: unknown;
    try {
      attrs = JSON.parse(Buffer.from(data).toString("utf8"));
    } catch {
      continue;
    }
    if (typeof attrs !== "object" || attrs === null) continue;
    const { message, stack_trace } = attrs as { message?: unknown; stack_trace?: unknown };
    if (typeof message === "string") failure.message = message;
    if (typeof stack_trace === "string") failure.stackTrace = stack_trace;
  }
}

/** `decodeHistoryPayloads` with a client's (or worker's) loaded data converter: its blob store, then its codecs. */
export function decodeHistory<H extends History>(history: H, converter: LoadedDataConverter): Promise<H> {
  return decodeHistoryPayloads(history, converter.payloadCodecs, converter.externalStorage);
}

/** Key ids of the payloads in `history` still encrypted by the built-in codec (empty: none, or all decoded). */
export function encryptedKeyIds(history: History): string[] {
  const payloads = collectPayloads(history.events);
  const text = (b: Uint8Array | null | undefined) => (b ? Buffer.from(b).toString("utf8") : undefined);
  const ids = payloads
    .filter((p) => text(p.metadata?.encoding) === ENCRYPTED_ENCODING)
    .map((p) => text(p.metadata?.[KEY_ID_METADATA]) ?? "?");
  return [...new Set(ids)];
}
