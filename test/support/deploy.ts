/**
 * A deploy through Worker Deployment Versioning, as the deploy test (test/server/deploy.test.ts) and the bench
 * (`npm run bench -- deploy`) drive it: a Temporal server that upgrades on continue-as-new (VERSIONING_SERVER_VERSION
 * on a SQLite file: the CLI's dev server, 1.29.1, ignores that option), versioned agent workers, the deployment's
 * routing, and what a run's history says about the versions that ran it.
 */
import { Client } from "@temporalio/client";
import proto from "@temporalio/proto";
import { NativeConnection } from "@temporalio/worker";
import { ensureVersioningServer } from "../../scripts/tools.js";
import { createTemporalServer, type TemporalServer } from "./cluster/temporal-server.js";
import { connectTestClient } from "./client-connection.js";
import { waitFor } from "./crash/harness.js";

type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;
const { RoutingConfigUpdateState, VersionDrainageStatus, WorkerDeploymentVersionStatus } = proto.temporal.api.enums.v1;

/**
 * The server's drainage check, every second: a version that is no longer current is "draining" until visibility shows
 * no open run pinned to it, then "drained". Temporal checks every 3 min after a 3 min grace by default
 * (`matching.wv.VersionDrainageStatusRefreshInterval`, `...VisibilityGracePeriod`), so a deployed server reports a
 * drained version up to ~6 min after its last run closed.
 */
export const DRAINAGE_CONFIG = {
  "matching.wv.VersionDrainageStatusRefreshInterval": "1s",
  "matching.wv.VersionDrainageStatusVisibilityGracePeriod": "1s",
};

export interface DeployEnv {
  server: TemporalServer;
  client: Client;
  connection: NativeConnection;
  close(): Promise<void>;
}

/** Starts the versioning server (built by `npm run ensure-tools`, or here on first use) and connects to it. */
export async function openDeployEnv(
  dynamicConfig: Record<string, string | number | boolean> = {},
  log: (line: string) => void = () => {},
): Promise<DeployEnv> {
  const server = await createTemporalServer({ server: ensureVersioningServer(log) }, "sqlite", {
    ...DRAINAGE_CONFIG,
    ...dynamicConfig,
  });
  try {
    const clientConnection = await connectTestClient(server.address);
    const connection = await NativeConnection.connect({ address: server.address });
    return {
      server,
      client: new Client({ connection: clientConnection }),
      connection,
      async close() {
        await connection.close();
        await clientConnection.close();
        await server.stop();
        server.cleanup();
      },
    };
  } catch (err) {
    await server.stop();
    server.cleanup();
    throw err;
  }
}

const version = (deploymentName: string, buildId: string) => ({ deploymentName, buildId });

/** The version as the server describes it (undefined until a worker of it has polled). */
export async function describeVersion(client: Client, deploymentName: string, buildId: string) {
  try {
    const { workerDeploymentVersionInfo } = await client.workflowService.describeWorkerDeploymentVersion({
      namespace: client.options.namespace,
      deploymentVersion: version(deploymentName, buildId),
    });
    return workerDeploymentVersionInfo ?? undefined;
  } catch (err) {
    if (/not found/i.test(String(err))) return undefined;
    throw err;
  }
}

/**
 * Makes `buildId` the deployment's current version once its workers have polled every task queue (workflow and
 * activity) that the version `covering` has: the server refuses a current version that would leave a queue of the
 * one it replaces unversioned, and a version registers each queue at its own first poll (on a busy machine, seconds
 * apart). New runs start there, pinned runs of other versions stay where they are.
 */
export async function makeCurrent(
  client: Client,
  deploymentName: string,
  buildId: string,
  options: { covering?: string; timeoutMs?: number } = {},
): Promise<void> {
  const queues = async (id: string) =>
    new Set(
      ((await describeVersion(client, deploymentName, id))?.taskQueueInfos ?? []).map((q) => `${q.name}/${q.type}`),
    );
  const needed = options.covering ? await queues(options.covering) : new Set<string>();
  await waitFor(
    async () => {
      if ((await describeVersion(client, deploymentName, buildId)) === undefined) return false;
      const has = await queues(buildId);
      return [...needed].every((q) => has.has(q));
    },
    options.timeoutMs ?? 120_000,
    `version ${buildId} of ${deploymentName} to be registered on every queue of ${options.covering ?? "none"}`,
  );
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: client.options.namespace,
    deploymentName,
    buildId,
    identity: "jai deploy",
  });
  await propagated(client, deploymentName, buildId, options.timeoutMs ?? 120_000);
}

/**
 * Waits until the server says the deployment's new routing has reached every partition of its task queues. Since
 * Temporal 1.31 setting the current version returns before that (`routingConfigUpdateState` IN_PROGRESS): a run
 * started meanwhile may land in a partition that does not know the version yet and waits in its unversioned backlog
 * until the routing arrives (on a busy machine, long enough to look lost). Servers that propagate before answering
 * report UNSPECIFIED or COMPLETED at once. A state stuck IN_PROGRESS (temporalio/temporal#11842) ends the wait at
 * `ms` with a warning rather than the test: routing that is late delays runs, it does not misplace them.
 */
async function propagated(client: Client, deploymentName: string, buildId: string, ms: number): Promise<void> {
  const done = async () => {
    const { workerDeploymentInfo: info } = await client.workflowService.describeWorkerDeployment({
      namespace: client.options.namespace,
      deploymentName,
    });
    return (
      info?.routingConfig?.currentDeploymentVersion?.buildId === buildId &&
      info.routingConfigUpdateState !== RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS
    );
  };
  await waitFor(done, ms, `the routing to ${buildId} to reach every partition`).catch((err: unknown) =>
    console.warn(`${String(err)}: going on (late routing delays runs, it does not lose them)`),
  );
}

/** What the server says of a version: "current", "ramping", "draining", "drained", "inactive" or "unknown". */
export async function versionStatus(client: Client, deploymentName: string, buildId: string): Promise<string> {
  const info = await describeVersion(client, deploymentName, buildId);
  if (!info) return "unknown";
  if (info.drainageInfo?.status === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED) return "drained";
  const name = WorkerDeploymentVersionStatus[info.status ?? 0] ?? "";
  return name.replace("WORKER_DEPLOYMENT_VERSION_STATUS_", "").toLowerCase() || "unknown";
}

/** The task queues a version's workers registered in it. */
export async function versionTaskQueues(client: Client, deploymentName: string, buildId: string): Promise<string[]> {
  const info = await describeVersion(client, deploymentName, buildId);
  return [...new Set((info?.taskQueueInfos ?? []).map((q) => q.name ?? ""))].sort();
}

/** Every run of a workflow's continue-as-new chain, oldest first, with its history. */
export async function chainHistories(
  client: Client,
  workflowId: string,
  firstRunId: string,
): Promise<{ runId: string; events: HistoryEvent[] }[]> {
  const runs: { runId: string; events: HistoryEvent[] }[] = [];
  for (let runId: string | undefined = firstRunId; runId; ) {
    const events: HistoryEvent[] = (await client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.push({ runId, events });
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return runs;
}

/** The build ids of the workers that completed a history's workflow tasks, in order of first appearance. */
export function buildIdsOf(events: HistoryEvent[]): string[] {
  const ids = events.flatMap((e) => {
    const a = e.workflowTaskCompletedEventAttributes;
    return a ? [a.deploymentVersion?.buildId ?? "(unversioned)"] : [];
  });
  return [...new Set(ids)];
}

/** The workflow tasks a history records as failed (nondeterminism, or any other failure of a task). */
export function failedTasks(events: HistoryEvent[]): string[] {
  return events.flatMap((e) =>
    e.workflowTaskFailedEventAttributes ? [e.workflowTaskFailedEventAttributes.failure?.message ?? "(no message)"] : [],
  );
}

/**
 * A run's history in one line per event (the last `last`), with each failed or timed-out workflow task's cause: what
 * a wait that ran out names, so a run that never got there under load says why (a task failing, or never picked up).
 */
export async function historyStory(client: Client, workflowId: string, last = 40): Promise<string> {
  const { EventType, WorkflowTaskFailedCause, TimeoutType } = proto.temporal.api.enums.v1;
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  return events
    .slice(-last)
    .map((e) => {
      const failed = e.workflowTaskFailedEventAttributes;
      const timedOut = e.workflowTaskTimedOutEventAttributes;
      const started = e.workflowTaskStartedEventAttributes;
      const detail = failed
        ? ` ${WorkflowTaskFailedCause[failed.cause ?? 0]}: ${failed.failure?.message ?? ""}`.slice(0, 300)
        : timedOut
          ? ` ${TimeoutType[timedOut.timeoutType ?? 0]}`
          : started
            ? ` by ${started.identity ?? "?"}`
            : "";
      return `  ${String(e.eventId)} ${EventType[e.eventType ?? 0]?.replace("EVENT_TYPE_", "")}${detail}`;
    })
    .join("\n");
}

/** How a history's run ended: "completed", "continuedAsNew", "failed", ... (or "open"). */
export function endOf(events: HistoryEvent[]): string {
  const last = events.at(-1);
  if (last?.workflowExecutionCompletedEventAttributes) return "completed";
  if (last?.workflowExecutionContinuedAsNewEventAttributes) return "continuedAsNew";
  if (last?.workflowExecutionFailedEventAttributes) return "failed";
  if (last?.workflowExecutionTerminatedEventAttributes) return "terminated";
  if (last?.workflowExecutionCanceledEventAttributes) return "canceled";
  if (last?.workflowExecutionTimedOutEventAttributes) return "timedOut";
  return "open";
}

/**
 * The version a run of a chain was pinned to from its start because the run before it was (Temporal's continue-as-new
 * inheritance), or "" when it started free: a first run, or a continued one whose continue-as-new asked
 * `initialVersioningBehavior: "AUTO_UPGRADE"` (the server records that option on neither event; without it a pinned
 * run's next run inherits its pin).
 */
export function inheritedPin(events: HistoryEvent[]): string {
  return events[0]?.workflowExecutionStartedEventAttributes?.inheritedPinnedVersion?.buildId ?? "";
}
