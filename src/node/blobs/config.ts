/**
 * Turning External Storage on (docs/large-payloads.md): JAI_BLOB_STORE names
 * the store (`file`, `file:/path`, `postgres://…`, or `off`), JAI_BLOB_THRESHOLD
 * the payload size from which a payload goes there (default 256 KiB), and
 * JAI_BLOB_MAX_RESULT_BYTES the largest tool result, error or image a run keeps
 * whole (default 20 MB). `dataConverterFromEnv` (src/node/codec/config.ts) puts it in
 * every data converter the project builds, beside the codec.
 */
import os from "node:os";
import path from "node:path";
import { ExternalStorage, type DataConverter, type LoadedDataConverter, type Payload } from "@temporalio/common";
import type { temporal } from "@temporalio/proto";
import {
  decodeReferencePayload,
  isReferencePayload,
} from "@temporalio/common/lib/internal-non-workflow/extstore-helpers.js";
import { StorageDriverClaim } from "@temporalio/common";
import { BlobDriver, FileBlobDriver, PostgresBlobDriver, redactUrl } from "./drivers.js";

/** From this size (protobuf bytes, after the codec) a payload goes to the store: Temporal's default, 256 KiB. */
export const DEFAULT_BLOB_THRESHOLD = 256 * 1024;
/** The largest tool result (text, images, details), or error text, kept whole when a store is configured. */
export const DEFAULT_MAX_RESULT_BYTES = 20 * 1024 * 1024;

/** A JAI_BLOB_* setting that cannot be used: names it. */
export class BlobStoreConfigError extends Error {
  override name = "BlobStoreConfigError";
}

/**
 * History holds claims and this process has no store to read them from: names the driver and what to set.
 * (Temporal's own client and worker say `[TMPRL1105] … external storage is not configured`.)
 */
export class BlobStoreNotConfiguredError extends Error {
  readonly code = "JAI_BLOB_STORE_NOT_CONFIGURED";
  constructor(
    readonly drivers: string[],
    readonly what = "this history",
  ) {
    super(
      `${what} keeps payloads in an external blob store (driver ${drivers.join(", ")}) and this process has none: ` +
        `set JAI_BLOB_STORE as the worker that wrote them has it (file:/path or postgres://…); see docs/large-payloads.md`,
    );
    this.name = "BlobStoreNotConfiguredError";
  }
}

/** External Storage as the agent configures it: one driver, and the size up to which a tool result is kept whole. */
export class AgentBlobStorage extends ExternalStorage {
  readonly driver: BlobDriver;
  /** The largest tool result, error or image (bytes) a run keeps whole; larger ones are cut to it with a note. */
  readonly maxResultBytes: number;

  constructor(driver: BlobDriver, options: BlobStorageOptions = {}) {
    super({ drivers: [driver], payloadSizeThreshold: options.threshold ?? DEFAULT_BLOB_THRESHOLD });
    this.driver = driver;
    this.maxResultBytes = options.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES;
    if (!Number.isInteger(this.maxResultBytes) || this.maxResultBytes < 1)
      throw new BlobStoreConfigError(
        `maxResultBytes must be a positive integer, got ${String(options.maxResultBytes)}`,
      );
  }
}

export interface BlobStorageOptions {
  /** Payloads of this many bytes or more go to the store; default 256 KiB. */
  threshold?: number;
  /** The largest tool result kept whole; default 20 MB. */
  maxResultBytes?: number;
}

/** External Storage over `driver` (`new FileBlobDriver(dir)`, `new PostgresBlobDriver(url)`), for `dataConverter.externalStorage`. */
export function blobStorage(driver: BlobDriver, options: BlobStorageOptions = {}): AgentBlobStorage {
  return new AgentBlobStorage(driver, options);
}

/** Where `JAI_BLOB_STORE=file` keeps blobs: ~/.jai/blobs. */
export const defaultBlobFolder = () => path.join(os.homedir(), ".jai", "blobs");

/** The driver a store spec names (`file`, `file:/path`, `file:///path`, `postgres://…`), or undefined for `off`/empty. */
export function blobDriverFromSpec(spec: string | undefined, source = "JAI_BLOB_STORE"): BlobDriver | undefined {
  const s = spec?.trim() ?? "";
  if (s === "" || /^(off|none|0|false|no)$/i.test(s)) return undefined;
  if (s === "file") return new FileBlobDriver(defaultBlobFolder());
  if (s.startsWith("file:")) {
    let dir = s.slice("file:".length);
    if (dir.startsWith("//")) dir = decodeURIComponent(new URL(s).pathname);
    if (!dir) throw new BlobStoreConfigError(`${source}=${s}: name a folder (file:/var/lib/jai/blobs)`);
    return new FileBlobDriver(path.resolve(dir));
  }
  if (/^postgres(ql)?:\/\//i.test(s)) {
    try {
      new URL(s);
    } catch {
      throw new BlobStoreConfigError(`${source}=${redactUrl(s)}: not a connection URL`);
    }
    return new PostgresBlobDriver(s);
  }
  throw new BlobStoreConfigError(
    `${source} must be "off", "file", "file:/path" or "postgres://user@host:port/db", got "${s.slice(0, 40)}"`,
  );
}

/** A byte count: `262144`, `256k`, `20m`, `1g` (KiB, MiB, GiB); `source` names the setting in errors. */
export function parseBytes(text: string, source: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?)?\s*$/i.exec(text);
  if (!m) throw new BlobStoreConfigError(`${source} must be a byte count (262144, 256k, 20m), got "${text}"`);
  const unit = (m[2] ?? "").toLowerCase()[0];
  const scale = unit === "k" ? 1024 : unit === "m" ? 1024 ** 2 : unit === "g" ? 1024 ** 3 : 1;
  return Math.round(Number(m[1]) * scale);
}

/** External Storage as the environment asks for it (JAI_BLOB_STORE, JAI_BLOB_THRESHOLD, JAI_BLOB_MAX_RESULT_BYTES), or undefined. */
export function blobStorageFromEnv(env: NodeJS.ProcessEnv = process.env): AgentBlobStorage | undefined {
  const driver = blobDriverFromSpec(env.JAI_BLOB_STORE);
  if (!driver) return undefined;
  const threshold = env.JAI_BLOB_THRESHOLD?.trim()
    ? parseBytes(env.JAI_BLOB_THRESHOLD, "JAI_BLOB_THRESHOLD")
    : undefined;
  const maxResultBytes = env.JAI_BLOB_MAX_RESULT_BYTES?.trim()
    ? parseBytes(env.JAI_BLOB_MAX_RESULT_BYTES, "JAI_BLOB_MAX_RESULT_BYTES")
    : undefined;
  if (maxResultBytes !== undefined && maxResultBytes < 1)
    throw new BlobStoreConfigError(`JAI_BLOB_MAX_RESULT_BYTES must be at least 1 byte`);
  return blobStorage(driver, { threshold, maxResultBytes });
}

/**
 * The largest tool result a worker with this data converter keeps whole (its store's `maxResultBytes`, 20 MB for a
 * plain ExternalStorage), or undefined without a store: results are then cut to the run's limits, as before.
 */
export function storedResultBytes(dataConverter: DataConverter | LoadedDataConverter | undefined): number | undefined {
  const storage = dataConverter?.externalStorage;
  if (!storage) return undefined;
  return storage instanceof AgentBlobStorage ? storage.maxResultBytes : DEFAULT_MAX_RESULT_BYTES;
}

/** A one-line description for a worker's start banner. */
export function describeBlobStorage(dataConverter: DataConverter | undefined): string {
  const storage = dataConverter?.externalStorage;
  if (!storage) return "off (JAI_BLOB_STORE)";
  const where =
    storage instanceof AgentBlobStorage ? storage.driver.where : storage.drivers.map((d) => d.name).join(", ");
  const keep = storedResultBytes(dataConverter)!;
  return `${where} (payloads from ${storage.payloadSizeThreshold} bytes; results kept whole up to ${keep} bytes)`;
}

type History = temporal.api.history.v1.IHistory;

const isPayload = (value: unknown): value is Payload => {
  const v = value as { metadata?: unknown } | null;
  return typeof v === "object" && v !== null && typeof v.metadata === "object" && v.metadata !== null;
};

/**
 * Visits every object in `value` (arrays included, byte arrays not) once, depth first, and the objects inside it
 * unless `visit` says it is a leaf (returns true).
 */
export function walkObjects(value: unknown, visit: (obj: object) => boolean | void, seen = new Set<unknown>()): void {
  if (typeof value !== "object" || value === null || value instanceof Uint8Array || seen.has(value)) return;
  seen.add(value);
  if (visit(value)) return;
  for (const child of Array.isArray(value) ? value : Object.values(value)) walkObjects(child, visit, seen);
}

/** The claims (reference payloads) in `value`. */
function collectReferences(value: unknown): Payload[] {
  const out: Payload[] = [];
  walkObjects(value, (v) => {
    if (!(isPayload(v) && "data" in v)) return false;
    if (isReferencePayload(v)) out.push(v);
    return true;
  });
  return out;
}

/** The drivers the claims in `history` name (none: it has no claims). */
export function claimDrivers(history: History): string[] {
  return [...new Set(collectReferences(history.events).map((p) => decodeReferencePayload(p).driverName))];
}

/**
 * Replaces every claim among `refs` (reference payloads) with the payload it stands for, in place (still encoded:
 * decode with the codec after). Without `storage` it is a BlobStoreNotConfiguredError; a claim whose blob is gone
 * is the driver's BlobNotFoundError.
 */
async function resolveInPlace(refs: Payload[], storage: ExternalStorage | undefined, what?: string): Promise<void> {
  if (refs.length === 0) return;
  const claims = refs.map((p) => decodeReferencePayload(p));
  if (!storage) throw new BlobStoreNotConfiguredError([...new Set(claims.map((c) => c.driverName))], what);
  const byDriver = new Map<string, number[]>();
  claims.forEach((c, i) => byDriver.set(c.driverName, [...(byDriver.get(c.driverName) ?? []), i]));
  for (const [name, indices] of byDriver) {
    const driver = storage.getDriver(name);
    if (!driver)
      throw new BlobStoreConfigError(
        `${what ?? "this history"} keeps payloads with driver "${name}", which this process's store (${storage.drivers.map((d) => d.name).join(", ")}) is not: set JAI_BLOB_STORE as the worker that wrote them has it`,
      );
    const payloads = await driver.retrieve(
      {},
      indices.map((i) => new StorageDriverClaim(claims[i].claimData)),
    );
    indices.forEach((at, j) => {
      const target = refs[at] as Payload & { externalPayloads?: unknown };
      target.metadata = payloads[j].metadata;
      target.data = payloads[j].data;
      target.externalPayloads = [];
    });
  }
}

/**
 * Replaces every claim in `history` with the payload it stands for, in place (still encoded: decode with the codec
 * after), as Temporal's worker does for what it is handed. Without `storage` a history that holds claims is a
 * BlobStoreNotConfiguredError; a claim whose blob is gone is the driver's BlobNotFoundError.
 */
export async function resolveHistoryClaims<H extends History>(
  history: H,
  storage: ExternalStorage | undefined,
  what?: string,
): Promise<H> {
  await resolveInPlace(collectReferences(history.events), storage, what);
  return history;
}

/** `payloads` with each claim replaced by the payload it stands for (others as they are): the codec server's /decode. */
export async function resolvePayloadClaims(
  payloads: Payload[],
  storage: ExternalStorage | undefined,
): Promise<Payload[]> {
  const out = payloads.map((p) => ({ ...p }));
  await resolveInPlace(
    out.filter((p) => isReferencePayload(p)),
    storage,
    "these payloads",
  );
  return out;
}
