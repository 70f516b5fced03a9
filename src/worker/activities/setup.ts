/** The setup activity: resolves the run's model and tool subset in the worker, once per run. */
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import { getApiProvider, getModel, type Api, type KnownProvider, type Model } from "@jai/ai";
import type { AgentTool, ModelRef } from "../../shared/contracts.js";
import type { RunSetup, ToolSpec } from "../../shared/wire.js";
import { checkActivityOptions, checkDuration } from "../../shared/run-input.js";
import { FailureType } from "../../shared/failure-types.js";
import { ModelPolicy } from "./model-policy.js";
import { modelNotServedFailure, onWorker } from "./classify.js";

function invalid(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`Invalid run input: ${message}`, FailureType.InvalidRunInput);
}

/** "provider/modelId": the worker's own models first, then @jai/ai's catalogue. Ids may contain "/". */
export function resolveModelRef(ref: string, models: Model<Api>[]): Model<Api> | undefined {
  const slash = ref.indexOf("/");
  const provider = ref.slice(0, slash);
  const id = ref.slice(slash + 1);
  return (
    models.find((m) => m.provider === provider && m.id === id) ??
    (getModel(provider as KnownProvider, id as never) as Model<Api> | undefined)
  );
}

export function toToolSpec(tool: AgentTool<any>): ToolSpec {
  return {
    name: tool.name,
    description: tool.description,
    // JSON round-trip drops TypeBox's symbol keys: the workflow gets plain JSON schema.
    parameters: JSON.parse(JSON.stringify(tool.parameters)),
    ...(tool.executionMode !== undefined ? { executionMode: tool.executionMode } : {}),
    ...(tool.idempotent === false
      ? { activity: { ...tool.activity, retry: { ...tool.activity?.retry, maximumAttempts: 1 } } }
      : tool.activity !== undefined
        ? { activity: tool.activity }
        : {}),
    ...(tool.requiresApproval
      ? { approval: typeof tool.requiresApproval === "function" ? "predicate" : "always" }
      : {}),
    ...(tool.approvalTimeout !== undefined ? { approvalTimeout: tool.approvalTimeout } : {}),
    // A local activity may run again after a worker dies: only idempotent tools may be fast.
    ...(tool.fast === true && tool.idempotent !== false ? { local: true } : {}),
    ...(tool.subAgent ? { subAgent: JSON.parse(JSON.stringify(tool.subAgent)) } : {}),
  };
}

/** Tells whether a namespace has every agent search attribute (cached per namespace; see search-attributes.ts). */
export type SearchAttributeCheck = (namespace: string) => Promise<boolean>;

/** Tools found at run setup rather than given up front (MCP servers), for the run's `tools` names (all when absent). */
export type ToolLister = (names: string[] | undefined) => Promise<AgentTool<any>[]>;

export function createSetupActivity(
  native: AgentTool<any>[],
  models: Model<Api>[],
  hasSearchAttributes: SearchAttributeCheck = async () => false,
  options: {
    encrypted?: boolean;
    /** The worker keeps big payloads in a blob store (`RunSetup.blobStore`). */
    blobStore?: boolean;
    listMore?: ToolLister;
    policy?: ModelPolicy;
    /** The worker's identity, named when it lacks a run's model. */
    workerIdentity?: () => string | undefined;
    /** The worker's own queue while it polls it: a regular setup names it (`RunSetup.taskQueue`). */
    ownTaskQueue?: () => string | undefined;
  } = {},
) {
  const listMore = options.listMore;
  const policy = options.policy ?? new ModelPolicy(models);
  /** One model of the run's chain, resolved and checked as the worker serves it (`field`: where the input names it). */
  const resolveOne = (ref: ModelRef, field: string): Model<Api> => {
    const model = typeof ref === "string" ? resolveModelRef(ref, models) : ref;
    const info = Context.current().info;
    const where = { identity: options.workerIdentity?.(), taskQueue: info.taskQueue };
    if (!model)
      throw invalid(
        `"${field}": unknown model "${ref}" (not among the models of ${onWorker(where)} nor in @jai/ai's ` +
          `catalogue; every worker of a task queue must serve the same models)`,
      );
    // An api another worker of the queue may have (its config module registers it): ModelNotServed, which the run
    // takes to any worker of the queue (a local setup: at once; a regular one: retried a bounded number of times).
    if (!getApiProvider(model.api)) throw modelNotServedFailure(model, model.api, where, info.isLocal);
    // A model object is the run's: served only as the worker serves that model (where its key goes is not the run's choice).
    if (typeof ref !== "string") {
      const verdict = policy.check(model);
      if (!verdict.served) throw invalid(`"${verdict.field.replace(/^model/, field)}": ${verdict.reason}`);
    }
    return model;
  };
  return async function resolveRunSetup(input: {
    model: ModelRef;
    /** The rest of a fallback chain (the run input's `model` as a list). */
    fallbacks?: ModelRef[];
    tools?: string[];
  }): Promise<RunSetup> {
    const chain = input.fallbacks !== undefined;
    const model = resolveOne(input.model, chain ? "model[0]" : "model");
    const fallbacks = (input.fallbacks ?? []).map((ref, i) => resolveOne(ref, `model[${i + 1}]`));
    const tools = listMore ? [...native, ...(await listMore(input.tools))] : native;
    let selected = tools;
    if (input.tools) {
      const missing = input.tools.filter((name) => !tools.some((t) => t.name === name));
      if (missing.length > 0) {
        const known = tools.map((t) => t.name).join(", ") || "none";
        throw invalid(
          `"tools": unknown tool${missing.length > 1 ? "s" : ""} ${missing.map((n) => `"${n}"`).join(", ")}; this worker has: ${known}`,
        );
      }
      selected = tools.filter((t) => input.tools!.includes(t.name));
    }
    for (const tool of selected) {
      const problem =
        checkActivityOptions(tool.activity, `${tool.name}.activity`) ??
        checkDuration(tool.approvalTimeout, `${tool.name}.approvalTimeout`);
      // The worker's configuration, not the caller's input: the run cannot use this tool as configured.
      if (problem)
        throw ApplicationFailure.nonRetryable(
          `Invalid tool configuration in the worker: ${problem}`,
          FailureType.InvalidToolConfig,
        );
    }
    const info = Context.current().info;
    const searchAttributes = await hasSearchAttributes(info.workflowNamespace ?? "default");
    // A regular setup is the one taken to any worker (this one serves the model): the first call comes here.
    const ownQueue = info.isLocal ? undefined : options.ownTaskQueue?.();
    return {
      model,
      ...(chain ? { fallbacks } : {}),
      tools: selected.map(toToolSpec),
      searchAttributes,
      ...(options.encrypted ? { private: true } : {}),
      ...(options.blobStore ? { blobStore: true } : {}),
      ...(ownQueue ? { taskQueue: ownQueue } : {}),
    };
  };
}
