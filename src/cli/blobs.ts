/**
 * `npm run blobs -- <stats|sweep>`: the blob store of JAI_BLOB_STORE (docs/large-payloads.md).
 *
 *   stats                           blobs and bytes stored
 *   sweep [--dry-run] [--min-age 1h] removes the blobs of runs Temporal no longer has (past the namespace's
 *                                   retention); what was written within --min-age stays (default 1h)
 *
 * Connected like the other CLIs (TEMPORAL_ADDRESS / --address, --namespace). Exit 0, 1 on a failure, 2 bad usage.
 */
import { blobStorageFromEnv } from "../node/blobs/config.js";
import { sweepBlobs } from "../node/blobs/sweep.js";
import { withCliClient } from "./connect.js";
import { argumentsOrExit, parseCli } from "./program.js";

const USAGE = `usage: npm run blobs -- stats | sweep [--dry-run] [--min-age 1h] [--address host:port] [--namespace ns]
The store is JAI_BLOB_STORE's (file:/path or postgres://...); sweep removes the blobs of the runs the namespace no
longer has (closed and past its retention), leaving what was written within --min-age (default 1h).`;

/** "90s", "30m", "1h", "2d" or milliseconds. */
function duration(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!m) throw new RangeError(`--min-age must be a duration (30m, 1h, 2d), got "${text}"`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? "ms"]!;
  return Number(m[1]) * unit;
}

async function main(): Promise<number> {
  const { values, positionals } = argumentsOrExit(USAGE, () =>
    parseCli(process.argv.slice(2), {
      "dry-run": { type: "boolean" },
      "min-age": { type: "string" },
      address: { type: "string" },
      namespace: { type: "string" },
    }),
  );
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const command = positionals[0];
  if (command !== "stats" && command !== "sweep") {
    console.error(USAGE);
    return 2;
  }
  const storage = blobStorageFromEnv();
  if (!storage) {
    console.error(`blobs: no store: set JAI_BLOB_STORE (file:/path or postgres://...)\n${USAGE}`);
    return 2;
  }
  const driver = storage.driver;
  try {
    if (command === "stats") {
      const stats = await driver.stats();
      console.log(`${driver.where}: ${stats.blobs} blobs, ${stats.bytes} bytes`);
      return 0;
    }
    let minAgeMs: number | undefined;
    try {
      minAgeMs = values["min-age"] !== undefined ? duration(String(values["min-age"])) : undefined;
    } catch (err) {
      console.error(`blobs: ${(err as Error).message}`);
      return 2;
    }
    return await withCliClient({ address: str(values.address), namespace: str(values.namespace) }, async (client) => {
      const dryRun = values["dry-run"] === true;
      const report = await sweepBlobs(client, driver, {
        minAgeMs,
        dryRun,
        onRemove: (owner, stats) =>
          console.log(
            `${dryRun ? "would remove" : "removed"} ${owner.namespace}/${owner.workflowId}${stats ? `: ${stats.blobs} blobs, ${stats.bytes} bytes` : ""}`,
          ),
      });
      console.log(
        `${report.removed.length} runs' blobs ${dryRun ? "would be removed" : `removed (${report.freed.blobs} blobs, ${report.freed.bytes} bytes)`}; ${report.kept} kept`,
      );
      return 0;
    });
  } finally {
    await driver.close();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`blobs: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
