/**
 * Where Temporal External Storage puts the payloads too big for history
 * (docs/large-payloads.md): a storage driver receives each payload as the
 * codec left it (encrypted when the codec is on: the SDK encodes, then
 * stores), keeps its protobuf bytes under their SHA-256, and hands back a
 * claim that names the run it belongs to. A retried store writes the same key
 * again, which is a no-op; a blob that is gone is a `BlobNotFoundError` naming
 * the run and the claim, never a hang.
 *
 * Two drivers: `FileBlobDriver` (a local folder, needs nothing) and
 * `PostgresBlobDriver` (a table in a PostgreSQL database, for a deployment
 * whose workers run on several machines).
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink, writeFile } from "node:fs/promises";
import path from "node:path";
import {
  StorageDriverClaim,
  type Payload,
  type StorageDriver,
  type StorageDriverRetrieveContext,
  type StorageDriverStoreContext,
  type StorageDriverTargetInfo,
} from "@temporalio/common";
import proto from "@temporalio/proto";

const PayloadProto = proto.temporal.api.common.v1.Payload;

/** The run (workflow id) a blob belongs to: what the sweeper asks Temporal about. */
export interface BlobOwner {
  namespace: string;
  /** The workflow id; "" when the payload came with no workflow (a standalone activity's, say). */
  workflowId: string;
}

/** What a claim (in history, in place of the payload) holds: the blob's key and the run it came from. */
export interface BlobClaim extends BlobOwner {
  /** SHA-256 (hex) of the payload's protobuf bytes. */
  key: string;
  /** The run that stored it, when the SDK said (not needed to find it). */
  runId?: string;
  /** Bytes stored. */
  bytes: number;
}

const claimData = (c: BlobClaim): Record<string, string> => ({
  key: c.key,
  ns: c.namespace,
  wf: c.workflowId,
  ...(c.runId ? { run: c.runId } : {}),
  bytes: String(c.bytes),
});

/** A claim's data as a driver wrote it; throws a BlobClaimError when it is not one of ours. */
export function parseClaim(driver: string, data: Record<string, string>): BlobClaim {
  const { key, ns, wf, run, bytes } = data;
  if (typeof key !== "string" || !/^[0-9a-f]{64}$/.test(key) || typeof ns !== "string" || typeof wf !== "string")
    throw new BlobClaimError(driver, data);
  return { key, namespace: ns, workflowId: wf, ...(run ? { runId: run } : {}), bytes: Number(bytes) || 0 };
}

const runName = (c: BlobClaim) =>
  `${c.workflowId ? `workflow "${c.workflowId}"` : "a payload with no workflow"}${c.runId ? ` run ${c.runId}` : ""} (namespace "${c.namespace}")`;

/**
 * A claim history holds whose blob the store does not have (swept after the run's retention, deleted by hand, or
 * another store than the one that wrote it). Never retried into success: the payload is gone.
 */
export class BlobNotFoundError extends Error {
  readonly code = "JAI_BLOB_NOT_FOUND";
  readonly workflowId: string;
  readonly runId?: string;
  readonly namespace: string;
  readonly key: string;
  constructor(
    /** The driver asked (its name, as the claim names it). */
    readonly driver: string,
    /** The claim as history holds it. */
    readonly claim: BlobClaim,
    /** Where the driver looked. */
    readonly where: string,
  ) {
    super(
      `payload ${claim.key} (${claim.bytes} bytes) of ${runName(claim)} is not in the blob store ${where} ` +
        `(driver ${driver}): it was removed (retention sweep, by hand) or this process reads another store than ` +
        `the one that wrote it; claim ${JSON.stringify(claimData(claim))}`,
    );
    this.name = "BlobNotFoundError";
    this.workflowId = claim.workflowId;
    this.runId = claim.runId;
    this.namespace = claim.namespace;
    this.key = claim.key;
  }
}

/** A blob whose bytes no longer hash to its key (a damaged file or row). */
export class BlobCorruptError extends Error {
  readonly code = "JAI_BLOB_CORRUPT";
  constructor(
    readonly driver: string,
    readonly claim: BlobClaim,
    where: string,
  ) {
    super(
      `payload ${claim.key} of ${runName(claim)} in the blob store ${where} (driver ${driver}) does not match its SHA-256: the stored bytes were altered`,
    );
    this.name = "BlobCorruptError";
  }
}

/** A claim a driver cannot read (not written by a jai-agent driver). */
export class BlobClaimError extends Error {
  readonly code = "JAI_BLOB_CLAIM";
  constructor(
    readonly driver: string,
    readonly claimData: Record<string, string>,
  ) {
    super(`driver ${driver} cannot read the claim ${JSON.stringify(claimData)}: it names no key, namespace or run`);
    this.name = "BlobClaimError";
  }
}

/** The owner of what the SDK stores for `target`: the workflow the payload belongs to. */
export function ownerOf(target: StorageDriverTargetInfo | undefined): BlobOwner & { runId?: string } {
  if (!target) return { namespace: "default", workflowId: "" };
  if (target.kind === "workflow")
    return {
      namespace: target.namespace,
      workflowId: target.id ?? "",
      ...(target.runId ? { runId: target.runId } : {}),
    };
  // A standalone activity (none of the agent's are): kept under its activity id.
  return { namespace: target.namespace, workflowId: target.id ? `activity:${target.id}` : "" };
}

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

/** A stored blob and where it is, for the sweeper and the numbers. */
export interface BlobStats {
  blobs: number;
  bytes: number;
}

/**
 * What both drivers share: payloads to protobuf bytes under their SHA-256, claims that name the run, the hash
 * checked on the way back. A driver says how to put, get, list and remove bytes.
 */
export abstract class BlobDriver implements StorageDriver {
  abstract readonly name: string;
  abstract readonly type: string;
  /** Where the blobs are, as errors name it (a folder, a database without its password). */
  abstract readonly where: string;

  protected abstract put(owner: BlobOwner, key: string, bytes: Uint8Array): Promise<void>;
  protected abstract get(owner: BlobOwner, key: string): Promise<Uint8Array | undefined>;
  /** Every owner that has blobs, with the time its newest blob was written (ms). */
  abstract owners(): AsyncIterable<BlobOwner & { newestMs: number }>;
  /** Removes every blob of `owner`; what was removed. */
  abstract removeOwner(owner: BlobOwner): Promise<BlobStats>;
  /** Everything stored. */
  abstract stats(): Promise<BlobStats>;
  /** Lets go of connections; the driver is not used after. */
  async close(): Promise<void> {}

  async store(context: StorageDriverStoreContext, payloads: Payload[]): Promise<StorageDriverClaim[]> {
    const owner = ownerOf(context.target);
    const claims: StorageDriverClaim[] = [];
    for (const payload of payloads) {
      context.abortSignal?.throwIfAborted();
      const bytes = PayloadProto.encode(payload).finish();
      const key = sha256(bytes);
      await this.put(owner, key, bytes);
      claims.push(new StorageDriverClaim(claimData({ ...owner, key, bytes: bytes.length })));
    }
    return claims;
  }

  async retrieve(context: StorageDriverRetrieveContext, claims: StorageDriverClaim[]): Promise<Payload[]> {
    const payloads: Payload[] = [];
    for (const c of claims) {
      context.abortSignal?.throwIfAborted();
      const claim = parseClaim(this.name, c.claimData);
      const bytes = await this.get(claim, claim.key);
      if (bytes === undefined) throw new BlobNotFoundError(this.name, claim, this.where);
      if (sha256(bytes) !== claim.key) throw new BlobCorruptError(this.name, claim, this.where);
      const decoded = PayloadProto.decode(bytes);
      payloads.push({
        metadata: decoded.metadata,
        data: decoded.data,
        ...(decoded.externalPayloads?.length ? { externalPayloads: decoded.externalPayloads } : {}),
      });
    }
    return payloads;
  }
}

/** A folder name for any string: readable where it can be, unique by its hash, never `..` or a path. */
function folderName(text: string): string {
  const readable = text.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
  return `${readable}~${sha256(text).slice(0, 16)}`;
}

const OWNER_FILE = "owner.json";

/**
 * Blobs in a local folder: `<root>/<namespace>/<workflow id>~<hash>/<sha256>`, each written to a temporary file,
 * synced and renamed into place (a crash mid-write leaves no partial blob under a key), plus `owner.json` naming the
 * run for the sweeper. Every process that reads the runs (workers, CLIs, the console) must see the same folder: one
 * machine, or a shared file system.
 */
export class FileBlobDriver extends BlobDriver {
  readonly name: string;
  readonly type = "jai.file";
  readonly where: string;
  readonly root: string;

  constructor(root: string, options: { name?: string } = {}) {
    super();
    this.root = path.resolve(root);
    this.name = options.name ?? "jai.file";
    this.where = this.root;
  }

  private dir(owner: BlobOwner): string {
    return path.join(this.root, folderName(owner.namespace), folderName(owner.workflowId));
  }

  protected async put(owner: BlobOwner, key: string, bytes: Uint8Array): Promise<void> {
    const dir = this.dir(owner);
    const file = path.join(dir, key);
    if (await exists(file)) return; // content-addressed: the same bytes are there already
    await mkdir(dir, { recursive: true });
    const ownerFile = path.join(dir, OWNER_FILE);
    if (!(await exists(ownerFile)))
      await writeFile(ownerFile, JSON.stringify({ namespace: owner.namespace, workflowId: owner.workflowId })).catch(
        () => {},
      );
    const tmp = `${file}.${randomBytes(6).toString("hex")}.tmp`;
    const handle = await open(tmp, "w");
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  }

  protected async get(owner: BlobOwner, key: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(path.join(this.dir(owner), key));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw err;
    }
  }

  async *owners(): AsyncIterable<BlobOwner & { newestMs: number }> {
    for (const ns of await list(this.root)) {
      for (const run of await list(path.join(this.root, ns))) {
        const dir = path.join(this.root, ns, run);
        let owner: BlobOwner;
        try {
          owner = JSON.parse(await readFile(path.join(dir, OWNER_FILE), "utf8")) as BlobOwner;
        } catch {
          continue; // not one of ours, or being written
        }
        let newestMs = 0;
        for (const name of await list(dir)) {
          const info = await stat(path.join(dir, name)).catch(() => undefined);
          if (info) newestMs = Math.max(newestMs, info.mtimeMs);
        }
        yield { ...owner, newestMs };
      }
    }
  }

  async removeOwner(owner: BlobOwner): Promise<BlobStats> {
    const dir = this.dir(owner);
    const stats = await folderStats(dir);
    await rm(dir, { recursive: true, force: true });
    return stats;
  }

  async stats(): Promise<BlobStats> {
    const total = { blobs: 0, bytes: 0 };
    for (const ns of await list(this.root))
      for (const run of await list(path.join(this.root, ns))) {
        const s = await folderStats(path.join(this.root, ns, run));
        total.blobs += s.blobs;
        total.bytes += s.bytes;
      }
    return total;
  }

  /** Removes one blob (tests: a lost blob). */
  async removeBlob(claim: BlobClaim): Promise<void> {
    await unlink(path.join(this.dir(claim), claim.key));
  }
}

const exists = async (file: string): Promise<boolean> => (await stat(file).catch(() => undefined)) !== undefined;

const list = (dir: string): Promise<string[]> => readdir(dir).catch(() => []);

async function folderStats(dir: string): Promise<BlobStats> {
  const out = { blobs: 0, bytes: 0 };
  for (const name of await list(dir)) {
    if (!/^[0-9a-f]{64}$/.test(name)) continue;
    const info = await stat(path.join(dir, name)).catch(() => undefined);
    if (!info) continue;
    out.blobs++;
    out.bytes += info.size;
  }
  return out;
}

/** The few parts of `pg` the driver uses (loaded on first use: a process without a PostgreSQL store never loads it). */
interface PgPool {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>;
  end(): Promise<void>;
  on(event: "error", listener: (err: Error) => void): unknown;
}

/** `postgres://user:secret@host/db` without the secret, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return "(a PostgreSQL connection string)";
  }
}

/**
 * Blobs in a PostgreSQL table (`jai_blobs` unless told): one row per (namespace, workflow id, key), written with
 * `ON CONFLICT DO NOTHING` (a retried store is a no-op), created on first use. Connections are pooled, time out
 * (10 s to connect, 60 s a statement) and let the process exit when idle.
 */
export class PostgresBlobDriver extends BlobDriver {
  readonly name: string;
  readonly type = "jai.postgres";
  readonly where: string;
  readonly table: string;
  private pool?: Promise<PgPool>;
  private ready?: Promise<void>;

  constructor(
    private readonly url: string,
    options: { name?: string; table?: string } = {},
  ) {
    super();
    this.name = options.name ?? "jai.postgres";
    this.table = options.table ?? "jai_blobs";
    if (!/^[a-z_][a-z0-9_]*$/i.test(this.table))
      throw new TypeError(`PostgreSQL blob table must be a plain identifier, got "${this.table}"`);
    this.where = `${redactUrl(url)} table ${this.table}`;
  }

  private connect(): Promise<PgPool> {
    this.pool ??= import("pg").then((pg) => {
      const Pool = (pg.default ?? pg).Pool;
      const pool = new Pool({
        connectionString: this.url,
        max: 4,
        connectionTimeoutMillis: 10_000,
        idleTimeoutMillis: 10_000,
        statement_timeout: 60_000,
        allowExitOnIdle: true,
      }) as unknown as PgPool;
      pool.on("error", () => {}); // an idle connection that dies is replaced on next use
      return pool;
    });
    return this.pool;
  }

  private async db(): Promise<PgPool> {
    const pool = await this.connect();
    this.ready ??= pool
      .query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (
           namespace text NOT NULL,
           workflow_id text NOT NULL,
           key text NOT NULL,
           data bytea NOT NULL,
           created_at timestamptz NOT NULL DEFAULT now(),
           PRIMARY KEY (namespace, workflow_id, key))`,
      )
      .then(
        () => undefined,
        (err: unknown) => {
          // Two processes creating the table at once: one wins, the other sees a duplicate type; either way it is there.
          if ((err as { code?: string }).code === "23505" || (err as { code?: string }).code === "42P07") return;
          this.ready = undefined;
          throw err;
        },
      );
    await this.ready;
    return pool;
  }

  protected async put(owner: BlobOwner, key: string, bytes: Uint8Array): Promise<void> {
    const db = await this.db();
    await db.query(
      `INSERT INTO ${this.table} (namespace, workflow_id, key, data) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`,
      [owner.namespace, owner.workflowId, key, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)],
    );
  }

  protected async get(owner: BlobOwner, key: string): Promise<Uint8Array | undefined> {
    const db = await this.db();
    const { rows } = await db.query<{ data: Buffer }>(
      `SELECT data FROM ${this.table} WHERE namespace = $1 AND workflow_id = $2 AND key = $3`,
      [owner.namespace, owner.workflowId, key],
    );
    return rows[0]?.data;
  }

  async *owners(): AsyncIterable<BlobOwner & { newestMs: number }> {
    const db = await this.db();
    const { rows } = await db.query<{ namespace: string; workflow_id: string; newest: Date }>(
      `SELECT namespace, workflow_id, max(created_at) AS newest FROM ${this.table} GROUP BY namespace, workflow_id`,
    );
    for (const r of rows) yield { namespace: r.namespace, workflowId: r.workflow_id, newestMs: r.newest.getTime() };
  }

  async removeOwner(owner: BlobOwner): Promise<BlobStats> {
    const db = await this.db();
    const { rows } = await db.query<{ bytes: string | null; blobs: string }>(
      `WITH gone AS (DELETE FROM ${this.table} WHERE namespace = $1 AND workflow_id = $2 RETURNING octet_length(data) AS n)
       SELECT count(*) AS blobs, sum(n) AS bytes FROM gone`,
      [owner.namespace, owner.workflowId],
    );
    return { blobs: Number(rows[0]?.blobs ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
  }

  async stats(): Promise<BlobStats> {
    const db = await this.db();
    const { rows } = await db.query<{ bytes: string | null; blobs: string }>(
      `SELECT count(*) AS blobs, sum(octet_length(data)) AS bytes FROM ${this.table}`,
    );
    return { blobs: Number(rows[0]?.blobs ?? 0), bytes: Number(rows[0]?.bytes ?? 0) };
  }

  /** Removes one blob (tests: a lost blob). */
  async removeBlob(claim: BlobClaim): Promise<void> {
    const db = await this.db();
    await db.query(`DELETE FROM ${this.table} WHERE namespace = $1 AND workflow_id = $2 AND key = $3`, [
      claim.namespace,
      claim.workflowId,
      claim.key,
    ]);
  }

  override async close(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    this.ready = undefined;
    if (pool) await (await pool).end();
  }
}
