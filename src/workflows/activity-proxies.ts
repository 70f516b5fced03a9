/**
 * Every activity the loop calls, with its defaults, in one place. A run's
 * `modelActivity` and a tool's `activity` settings override these per call
 * (see `activityOverrides`); nothing else sets activity options.
 *
 * | activity | kind | why these defaults |
 * |---|---|---|
 * | agentSearchAttributesExist | local, only in a run refused before its setup | quick lookup (cached per namespace); the refused run then shows AgentStatus "failed" |
 * | resolveRunSetup | local in the first task (regular in runs recorded before); regular again when the local worker lacks the model | quick worker lookup: the first model call goes out one round trip sooner |
 * | streamAssistantMessage | regular, heartbeats | long streams; on cancel it hands back the partial message |
 * | executeTool | regular, heartbeats | user code of any length; few retries (tools may not be idempotent) |
 * | executeFastTool | local | tools marked `fast`: no extra round trips through the server |
 * | prepareToolCall | regular, no heartbeat | the approval predicate: quick, a short timeout of its own |
 * | compactContext | regular, heartbeats | a summarizing model call |
 * | deliverRunWebhook | regular | receivers are often briefly down: about half an hour of retries |
 * | checkOutput | local, only in runs with a typed `output` | validates a final answer against the schema: quick, deterministic |
 */
import {
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
  type ActivityOptions,
} from "@temporalio/workflow";
import type { createActivities } from "../worker/activities/index.js";
import type { AgentActivityOptions } from "../shared/contracts.js";

type Activities = ReturnType<typeof createActivities>;

const SETUP: ActivityOptions = { startToCloseTimeout: "1m", retry: { maximumAttempts: 5 } };

export const MODEL_DEFAULTS: ActivityOptions = {
  startToCloseTimeout: "10m",
  heartbeatTimeout: "30s",
  retry: { initialInterval: "2s", backoffCoefficient: 2, maximumInterval: "60s", maximumAttempts: 8 },
  // On cancellation, wait for the activity: it hands back the partial message it had streamed.
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
};

export const TOOL_DEFAULTS: ActivityOptions = {
  startToCloseTimeout: "10m",
  heartbeatTimeout: "30s",
  retry: { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "30s", maximumAttempts: 3 },
};

export const { resolveRunSetup } = proxyActivities<Activities>(SETUP);
export const { resolveRunSetup: resolveRunSetupLocally } = proxyLocalActivities<Activities>(SETUP);
/**
 * The setup again after the local one found its worker lacking the run's model (ModelNotServed): a regular
 * activity, so each attempt may reach another worker of the queue. About a minute of attempts, then the run
 * ends with the last worker's words (every worker of a queue should serve the same models). Many short
 * attempts rather than few long ones: each goes to whichever worker polls first, so once a worker that serves
 * the model is up, a lacking one still takes about half the attempts (with 10 attempts 10 s apart, a run
 * started before the serving worker came up used its 9th and 10th under load).
 */
export const { resolveRunSetup: resolveRunSetupOnAnyWorker } = proxyActivities<Activities>({
  startToCloseTimeout: "1m",
  retry: { initialInterval: "1s", backoffCoefficient: 1.5, maximumInterval: "2s", maximumAttempts: 30 },
});
/** A run refused before its setup asks whether it may upsert its AgentStatus: quick, local, a few attempts. */
export const { agentSearchAttributesExist } = proxyLocalActivities<Activities>({
  startToCloseTimeout: "10s",
  retry: { maximumAttempts: 3 },
});
export const { streamAssistantMessage } = proxyActivities<Activities>(MODEL_DEFAULTS);
export const { executeTool } = proxyActivities<Activities>(TOOL_DEFAULTS);
/** A fast tool's call: no heartbeat (local activities have none), a short default timeout, the tools' retries. */
export const { executeFastTool } = proxyLocalActivities<Activities>({
  startToCloseTimeout: "1m",
  retry: TOOL_DEFAULTS.retry,
});
/**
 * The approval predicate is quick worker code: it never heartbeats, so it has
 * no heartbeat timeout (a tool's would kill it), a short timeout of its own and
 * few retries; when it still fails, the call ends with an error result.
 */
export const { prepareToolCall } = proxyActivities<Activities>({
  startToCloseTimeout: "1m",
  retry: { initialInterval: "1s", backoffCoefficient: 2, maximumAttempts: 3 },
});
export const { compactContext } = proxyActivities<Activities>({
  startToCloseTimeout: "10m",
  heartbeatTimeout: "30s",
  retry: { maximumAttempts: 3 },
});
export const { deliverRunWebhook } = proxyActivities<Activities>({
  startToCloseTimeout: "30s",
  retry: { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "5m", maximumAttempts: 12 },
});

/** Typed results: a candidate final answer checked against the run's schema in the worker (quick, pure). */
export const { checkOutput } = proxyLocalActivities<Activities>({
  startToCloseTimeout: "10s",
  retry: { maximumAttempts: 3 },
});

/** Per-run or per-tool settings over the defaults of the activity proxy (deep-merged by the SDK). */
export function activityOverrides(override: AgentActivityOptions | undefined, summary: string): ActivityOptions {
  return {
    ...(override?.startToCloseTimeout !== undefined ? { startToCloseTimeout: override.startToCloseTimeout } : {}),
    ...(override?.heartbeatTimeout !== undefined ? { heartbeatTimeout: override.heartbeatTimeout } : {}),
    ...(override?.retry !== undefined ? { retry: override.retry } : {}),
    summary,
  } as ActivityOptions;
}
