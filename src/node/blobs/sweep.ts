/**
 * The blob store's lifecycle (docs/large-payloads.md, "Lifecycle"): a blob lives as long as the history that
 * holds its claim. Temporal deletes a closed run's history after the namespace's retention; the sweeper then
 * removes the blobs of every workflow id Temporal no longer knows (`DescribeWorkflowExecution` answers NotFound),
 * leaving alone what was written recently (a start request stores its input before the workflow exists).
 */
import type { Client } from "@temporalio/client";
import { status as grpcStatus } from "@grpc/grpc-js";
import type { BlobDriver, BlobOwner, BlobStats } from "./drivers.js";

export interface SweepOptions {
  /** Blobs of an owner written less than this long ago are kept whatever Temporal says; default 1 hour. */
  minAgeMs?: number;
  /** Say what would be removed, remove nothing. */
  dryRun?: boolean;
  /** Told of each owner removed (or that would be). */
  onRemove?: (owner: BlobOwner, stats: BlobStats | undefined) => void;
}

export interface SweepReport {
  /** Owners (workflow ids) whose blobs were kept: the run is still known, too recent, or of another namespace. */
  kept: number;
  /** Owners removed (or, in a dry run, that would be). */
  removed: BlobOwner[];
  /** What the removal freed (0 in a dry run). */
  freed: BlobStats;
}

/** Whether Temporal still has any run of `workflowId` (open, or closed within retention). Errors other than NotFound count as yes. */
async function known(client: Client, workflowId: string): Promise<boolean> {
  try {
    await client.workflowService.describeWorkflowExecution({
      namespace: client.options.namespace,
      execution: { workflowId },
    });
    return true;
  } catch (err) {
    return (err as { code?: number }).code !== grpcStatus.NOT_FOUND;
  }
}

/** Removes the blobs of the runs of `client`'s namespace that Temporal no longer has. */
export async function sweepBlobs(client: Client, driver: BlobDriver, options: SweepOptions = {}): Promise<SweepReport> {
  const minAgeMs = options.minAgeMs ?? 60 * 60 * 1000;
  const report: SweepReport = { kept: 0, removed: [], freed: { blobs: 0, bytes: 0 } };
  const now = Date.now();
  for await (const owner of driver.owners()) {
    const keep =
      owner.namespace !== client.options.namespace ||
      owner.workflowId === "" ||
      now - owner.newestMs < minAgeMs ||
      (await known(client, owner.workflowId));
    if (keep) {
      report.kept++;
      continue;
    }
    const who = { namespace: owner.namespace, workflowId: owner.workflowId };
    report.removed.push(who);
    if (options.dryRun) {
      options.onRemove?.(who, undefined);
      continue;
    }
    const stats = await driver.removeOwner(who);
    report.freed.blobs += stats.blobs;
    report.freed.bytes += stats.bytes;
    options.onRemove?.(who, stats);
  }
  return report;
}
