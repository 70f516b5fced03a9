/**
 * The webhook activity: POSTs a finished run's outcome, signed with
 * HMAC-SHA256 under a secret the worker resolves by name (the secret never
 * enters history). Temporal retries it; answers that will never succeed stop it.
 */
import { createHmac } from "node:crypto";
import { ApplicationFailure } from "@temporalio/common";
import type { Usage } from "@jai/ai";
import type { AgentStopReason } from "../types.js";
import type { WebhookTarget } from "./field.js";
import { checkWebhookUrl } from "./target.js";

/** The header holding `sha256=<hex HMAC-SHA256 of the raw body>`. */
export const SIGNATURE_HEADER = "x-jai-signature";
/** The header naming the delivery (`<workflowId>/<runId>`), the same on every retry: receivers deduplicate on it. */
export const DELIVERY_HEADER = "x-jai-delivery";

/** The body of a webhook delivery. */
export interface RunOutcome {
  /** Workflow id of the run. */
  workflowId: string;
  /** Temporal run id of its last run (continue-as-new changes it). */
  runId: string;
  /** How the workflow closed: "completed" (whatever its stopReason), "failed" or "cancelled". */
  status: "completed" | "failed" | "cancelled";
  /** Why the run ended. */
  stopReason: AgentStopReason;
  /** The last assistant message's text ("" when none). */
  finalText: string;
  /** Model calls made. */
  turns: number;
  /** Total usage of the run. */
  usage: Usage;
  /** Set when it ended on an error. */
  errorMessage?: string;
  /** When the run ended (ISO 8601, workflow time). */
  endedAt: string;
}

/** The worker's webhook settings. */
export interface WebhookOptions {
  /** Signing secrets by name; a name missing here is read from `JAI_WEBHOOK_SECRET_<NAME>` (upper case, "-" and "." as "_"). */
  secrets?: Record<string, string>;
  /** Let webhooks reach loopback and private addresses (tests, in-cluster receivers); default false. */
  allowPrivateHosts?: boolean;
  /** Longest one delivery attempt may wait for an answer; default 10 s. */
  requestTimeoutMs?: number;
}

/** Signature header value for `body`. */
export function signWebhookBody(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

function secretFor(name: string, options: WebhookOptions, env: NodeJS.ProcessEnv): string | undefined {
  return options.secrets?.[name] ?? env[`JAI_WEBHOOK_SECRET_${name.toUpperCase().replace(/[-.]/g, "_")}`];
}

export function createWebhookActivity(options: WebhookOptions = {}, env: NodeJS.ProcessEnv = process.env) {
  return async function deliverRunWebhook(input: {
    webhook: WebhookTarget;
    outcome: RunOutcome;
  }): Promise<{ status: number }> {
    const { url, secretName } = input.webhook;
    const secret = secretFor(secretName, options, env);
    if (!secret)
      throw ApplicationFailure.nonRetryable(
        `webhook secret "${secretName}" is not configured in this worker`,
        "WebhookSecretMissing",
      );
    const refused = await checkWebhookUrl(url, options.allowPrivateHosts ?? false);
    if (refused) throw ApplicationFailure.nonRetryable(refused, "WebhookUrlRefused");
    const body = JSON.stringify(input.outcome);
    let response: Response;
    try {
      response = await fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          [SIGNATURE_HEADER]: signWebhookBody(body, secret),
          [DELIVERY_HEADER]: `${input.outcome.workflowId}/${input.outcome.runId}`,
        },
        body,
        // A redirect could lead anywhere, including inside: not followed.
        redirect: "manual",
        signal: AbortSignal.timeout(options.requestTimeoutMs ?? 10_000),
      });
    } catch (err) {
      throw ApplicationFailure.retryable(
        `webhook POST to ${new URL(url).host} failed: ${err instanceof Error ? err.message : String(err)}`,
        "WebhookUnreachable",
      );
    }
    await response.body?.cancel().catch(() => {});
    if (response.ok) return { status: response.status };
    const retry = response.status === 408 || response.status === 429 || response.status >= 500;
    const message = `webhook POST to ${new URL(url).host} answered ${response.status}`;
    throw retry
      ? ApplicationFailure.retryable(message, "WebhookRetryableStatus")
      : ApplicationFailure.nonRetryable(message, "WebhookRejected");
  };
}
