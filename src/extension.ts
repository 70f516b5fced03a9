/**
 * The one seam optional worker features plug in through (DESIGN.md §7: off by default; the loop imports none).
 *
 * `createAgentWorker({ extensions: [ext] })` calls `ext.setup(host)` once, before it creates any Temporal worker;
 * `setup` may refuse the worker's options (throw) and returns what the agent's workers get besides (activity
 * interceptors, a default replay cap, a listener for the runs a worker runs: the loop's generic `extensions` sink)
 * and what the extension runs alongside them (its own Temporal workers, with their own activities and workflows,
 * and a start/stop lifecycle). The core never names an extension; the agent's workers register the agent's
 * activities and workflows only.
 *
 * Shipped: fast failover, `fastFailover()` from `jai-agent/failover` (src/failover/index.ts, docs/failover.md).
 */
import type { Client } from "@temporalio/client";
import type { DataConverter, Duration } from "@temporalio/common";
import type { ActivityInterceptorsFactory, InjectedSinks, Worker, WorkerOptions } from "@temporalio/worker";
import type { AgentSinks } from "./workflows/definitions.js";

/** What the worker being created tells each extension (`setup`). */
export interface AgentWorkerHost {
  /** The shared task queue. */
  readonly taskQueue: string;
  /** The queue only this worker polls (its runs' model calls); none when `routeModelCalls` is off. */
  readonly ownTaskQueue?: string;
  /** A client on the worker's connection, with its data converter. */
  readonly client: Client;
  readonly dataConverter?: DataConverter;
  /**
   * Creates a Temporal worker on the agent's connection, namespace and data converter; one made before the agent's
   * worker exists, or while it is being created, is shut down if the creation fails.
   */
  createWorker(options: Omit<WorkerOptions, "connection" | "namespace" | "dataConverter">): Promise<Worker>;
  /**
   * Creates a worker that polls `taskQueue` as the own-queue worker polls its own: the agent's activities, the
   * same activity interceptors and options. Not started; the caller runs and stops it (callable once `created`).
   */
  createActivityWorker(taskQueue: string): Promise<Worker>;
}

/** The agent's Temporal workers, once created (`AgentWorkerExtensionParts.created`). */
export interface AgentWorkerPollers {
  /** Polls the shared queue (workflows and activities). */
  readonly worker: Worker;
  /** Polls the own queue (routed model calls), when routing is on. */
  readonly ownWorker?: Worker;
}

/** What an extension adds to a worker; every field optional. */
export interface AgentWorkerExtensionParts {
  /** Activity interceptors of the shared and own-queue workers (after the caller's, tracing's and metrics'). */
  activityInterceptors?: ActivityInterceptorsFactory[];
  /** The replay cap (`maxConcurrentReplays`) the worker takes when none is set. */
  defaultMaxConcurrentReplays?: number;
  /** The shared worker's sticky queue timeout when `workerOptions` sets none (the core's: Temporal's 10 s). */
  defaultStickyTimeout?: Duration;
  /** A workflow task of a run runs on this worker, also when replaying it (the loop's `extensions.runSeen` sink). */
  runSeen?(run: { workflowId: string; runId: string }): void;
  /** Once the agent's workers exist: the extension makes its own (with `host.createWorker`), to run with them. */
  created?(pollers: AgentWorkerPollers): Promise<Worker[] | void>;
  /** The workers run from now on (after `created`'s workers were started). */
  start?(): void;
  /** The worker begins to stop (its `shutdown()`, or the end of `runUntil`'s promise): stop starting new work. */
  stop?(): void;
  /** Every Temporal worker (the extension's included) has stopped: let go of the rest. */
  stopped?(): Promise<void>;
}

/** An optional feature of a worker: `createAgentWorker({ extensions: [ext] })`. */
export interface AgentWorkerExtension {
  /** Named in errors. */
  readonly name: string;
  setup(host: AgentWorkerHost): AgentWorkerExtensionParts | Promise<AgentWorkerExtensionParts>;
}

/** The loop's `extensions` sink: tells each extension's `runSeen`; on every worker that runs or replays a task. */
export function extensionSinks(
  parts: readonly AgentWorkerExtensionParts[] = [],
): InjectedSinks<AgentSinks>["extensions"] {
  const listeners = parts.flatMap((p) => (p.runSeen ? [p.runSeen.bind(p)] : []));
  return {
    runSeen: {
      fn: listeners.length
        ? (info) => {
            for (const seen of listeners) seen({ workflowId: info.workflowId, runId: info.runId });
          }
        : () => {},
      callDuringReplay: true,
    },
  };
}
