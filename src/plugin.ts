/**
 * AgentPlugin: agent runs on a worker (and client) a team already has, next to
 * its other Temporal plugins: `Worker.create({ ..., plugins: [new AgentPlugin({ tools })] })`.
 */
import { Client } from "@temporalio/client";
import { SimplePlugin } from "@temporalio/plugin";
import type { BundleOptions, InjectedSinks, WorkerOptions } from "@temporalio/worker";
import { createActivities } from "./activities/index.js";
import type { AgentServeOptions } from "./serving.js";
import { agentWorkflowsPath, webpackConfigHook } from "./worker.js";
import type { AgentSinks } from "./workflows/definitions.js";
import { extensionSinks } from "./extension.js";
import { noMetricsSink } from "./telemetry/metrics.js";
import { bundleEncryptsFailures, encryptsFailures, withEncryptedFailures } from "./codec/config.js";

/**
 * What the plugin serves (see `AgentServeOptions`). A plugin worker has no own
 * queue: model calls stay on the shared one.
 */
export type AgentPluginOptions = AgentServeOptions;

/**
 * Adds the agent's activities, its event sink and (when the worker has no
 * workflows of its own) its workflows to a worker. A worker that has its own
 * `workflowsPath` keeps it: that module must `export * from "jai-agent/workflows"`
 * so one worker serves both. On a worker, client or replayer with a payload
 * codec it encrypts failure messages and stack traces too; otherwise a client
 * is left as it is (`startAgentRun` works with any client).
 */
export class AgentPlugin extends SimplePlugin {
  constructor(private readonly agent: AgentPluginOptions = {}) {
    // Under a codec, failure messages and stack traces go through it too (a provider's error can quote the request).
    super({ name: "jai-agent.AgentPlugin", dataConverter: (dc) => withEncryptedFailures(dc ?? {}) });
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    const base = super.configureWorker(options);
    if (!base.connection)
      throw new TypeError("AgentPlugin needs the worker's `connection` option (a NativeConnection)");
    if (base.workflowBundle && encryptsFailures(base.dataConverter) && !bundleEncryptsFailures(base.workflowBundle))
      throw new TypeError(
        "AgentPlugin: the worker has a payload codec but its workflowBundle writes failures in plain text: " +
          "bundle it with bundleAgentWorkflows(path, { encryptFailures: true })",
      );
    // NativeConnection serves a Client too: activities read a run's context through it on a cache miss.
    // With the worker's data converter: under a codec the context query's answer is encoded too.
    const client = new Client({
      connection: base.connection,
      namespace: base.namespace ?? "default",
      dataConverter: base.dataConverter,
    });
    const activities = createActivities({ ...this.agent, tools: this.agent.tools ?? [], client });
    const clash = Object.keys(activities).find((name) => name in ((base.activities as object | undefined) ?? {}));
    if (clash) throw new TypeError(`AgentPlugin: the worker already has an activity named "${clash}"`);
    const onEvent = this.agent.onEvent;
    const sinks: InjectedSinks<AgentSinks> = {
      agent: {
        emit: {
          fn: (info, event) => onEvent?.(event, { workflowId: info.workflowId, runId: info.runId }),
          callDuringReplay: false,
        },
      },
      metrics: noMetricsSink(),
      extensions: extensionSinks(),
    };
    const ownWorkflows = base.workflowsPath !== undefined || base.workflowBundle !== undefined;
    return {
      ...base,
      activities: { ...(base.activities as object | undefined), ...activities },
      sinks: { ...base.sinks, ...sinks },
      ...(ownWorkflows ? {} : { workflowsPath: agentWorkflowsPath() }),
      // Cancellation reaches an activity with a heartbeat's answer: keep that under ~1 s.
      maxHeartbeatThrottleInterval: base.maxHeartbeatThrottleInterval ?? "1s",
    };
  }

  override configureBundler(options: BundleOptions): BundleOptions {
    const base = super.configureBundler(options);
    const theirs = base.webpackConfigHook;
    // Running from TypeScript sources, "./x.js" imports must resolve to "./x.ts"; harmless for built code.
    return { ...base, webpackConfigHook: (config) => webpackConfigHook(theirs ? theirs(config) : config) };
  }
}
