/**
 * The webhook activity: POSTs a finished run's outcome, signed with
 * HMAC-SHA256 under a secret the worker resolves by name (the secret never
 * enters history). The worker's config binds each secret to the origins it may
 * sign for: a run names a secret, but only gets a signature under it when its
 * URL is one of them. The connection goes to the address that was checked.
 * Temporal retries it; answers that will never succeed stop it.
 */
import { createHmac } from "node:crypto";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { ApplicationFailure } from "@temporalio/common";
import type { Usage } from "@jai/ai";
import type { AgentStopReason } from "../../shared/contracts.js";
import type { WebhookTarget } from "../../shared/webhook-field.js";
import { pinnedLookup, webhookAddresses, type WebhookResolver } from "./target.js";
import { parseUrl } from "../../shared/urls.js";

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
  /** A run with a typed `output`: its validated final answer (as `AgentRunResult.output`). */
  output?: unknown;
  /** When the run ended (ISO 8601, workflow time). */
  endedAt: string;
}

/** A signing secret and where deliveries signed with it may go. */
export interface WebhookSecret {
  /** The HMAC-SHA256 key. */
  secret: string;
  /** URL origins (`https://hooks.example.com`, `http://10.0.0.5:8080`) this secret signs deliveries to; any other URL gets none. */
  origins: string[];
}

/** The worker's webhook settings. */
export interface WebhookOptions {
  /**
   * Signing secrets by name, each bound to the origins it may sign for. A name
   * missing here is read from `JAI_WEBHOOK_SECRET_<NAME>` with its origins from
   * `JAI_WEBHOOK_ORIGINS_<NAME>` (comma-separated; upper case, "-" and "." as
   * "_"). A run naming a secret for a URL outside its origins is refused
   * (`WebhookSecretMissing`): run input never picks what a secret signs.
   */
  secrets?: Record<string, WebhookSecret>;
  /** Let webhooks reach loopback and private addresses (tests, in-cluster receivers); default false. */
  allowPrivateHosts?: boolean;
  /** Longest one delivery attempt may wait for an answer; default 10 s. */
  requestTimeoutMs?: number;
  /** How host names are resolved (default the system resolver); every address it returns is checked, and the connection goes only to those. */
  resolve?: WebhookResolver;
}

/** Signature header value for `body`. */
export function signWebhookBody(body: string, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** Origin of a configured entry, normalised (`https://Hooks.example.com:443/x` → `https://hooks.example.com`). */
function originOf(entry: string, where: string): string {
  const url = parseUrl(entry.trim());
  if (!url) throw new Error(`${where}: "${entry}" is not a URL origin`);
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new Error(`${where}: "${entry}" must be an http or https origin`);
  return url.origin;
}

/**
 * The secret named `name` when the worker's config binds it to `url`'s origin;
 * undefined when it is not configured, or not for that origin.
 */
export function webhookSecretFor(
  name: string,
  url: string,
  options: WebhookOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): string | undefined {
  const envName = name.toUpperCase().replace(/[-.]/g, "_");
  const configured = Object.hasOwn(options.secrets ?? {}, name) ? options.secrets![name] : undefined;
  const secret = configured?.secret ?? env[`JAI_WEBHOOK_SECRET_${envName}`];
  const origins = configured
    ? (configured.origins ?? []).map((o) => originOf(o, `webhooks.secrets.${name}.origins`))
    : (env[`JAI_WEBHOOK_ORIGINS_${envName}`] ?? "")
        .split(",")
        .filter((o) => o.trim())
        .map((o) => originOf(o, `JAI_WEBHOOK_ORIGINS_${envName}`));
  const target = parseUrl(url)?.origin;
  return secret && target && origins.includes(target) ? secret : undefined;
}

/** POSTs `body` to `url`, connecting only to `addresses`; resolves with the answer's status. Redirects are not followed. */
function post(
  url: URL,
  headers: Record<string, string>,
  body: string,
  addresses: Parameters<typeof pinnedLookup>[0],
  signal: AbortSignal,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        // A fresh agent: no pooled socket to some other address, and the pinned lookup is the one used.
        agent: false,
        lookup: pinnedLookup(addresses) as never,
        signal,
      },
      (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

export function createWebhookActivity(options: WebhookOptions = {}, env: NodeJS.ProcessEnv = process.env) {
  // A malformed entry fails the worker at start, not a run later (a bare string, the old form, is bound to nothing).
  for (const [name, entry] of Object.entries(options.secrets ?? {})) {
    const where = `webhooks.secrets.${name}`;
    if (typeof entry !== "object" || entry === null || typeof entry.secret !== "string" || !entry.secret)
      throw new Error(`${where} must be { secret, origins: ["https://receiver.example"] }`);
    if (!Array.isArray(entry.origins) || !entry.origins.length)
      throw new Error(`${where}.origins must list the URL origins this secret signs deliveries to`);
    for (const o of entry.origins) originOf(o, `${where}.origins`);
  }
  return async function deliverRunWebhook(input: {
    webhook: WebhookTarget;
    outcome: RunOutcome;
  }): Promise<{ status: number }> {
    // The run's input names the secret and the URL; the worker's config decides whether that secret signs for that URL.
    const { url, secretName } = input.webhook;
    const parsed = parseUrl(url);
    if (!parsed) throw ApplicationFailure.nonRetryable(`webhook URL is not a URL: ${url}`, "WebhookUrlRefused");
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
      throw ApplicationFailure.nonRetryable(
        `webhook URL must be http or https, got ${parsed.protocol}`,
        "WebhookUrlRefused",
      );
    const secret = webhookSecretFor(secretName, url, options, env);
    if (!secret)
      throw ApplicationFailure.nonRetryable(
        `webhook secret "${secretName}" is not configured for ${parsed.origin} in this worker (webhooks.secrets.<name>.origins, or JAI_WEBHOOK_ORIGINS_<NAME>)`,
        "WebhookSecretMissing",
      );
    const body = JSON.stringify(input.outcome);
    let status: number;
    try {
      // Resolved once, here; the socket connects only to the addresses judged now.
      const addresses = await webhookAddresses(parsed, options.allowPrivateHosts ?? false, options.resolve);
      if (typeof addresses === "string") throw ApplicationFailure.nonRetryable(addresses, "WebhookUrlRefused");
      status = await post(
        parsed,
        {
          "content-type": "application/json",
          [SIGNATURE_HEADER]: signWebhookBody(body, secret),
          [DELIVERY_HEADER]: `${input.outcome.workflowId}/${input.outcome.runId}`,
        },
        body,
        addresses,
        AbortSignal.timeout(options.requestTimeoutMs ?? 10_000),
      );
    } catch (err) {
      if (err instanceof ApplicationFailure) throw err;
      throw ApplicationFailure.retryable(
        `webhook POST to ${parsed.host} failed: ${err instanceof Error ? err.message : String(err)}`,
        "WebhookUnreachable",
      );
    }
    // A redirect could lead anywhere, including inside: not followed (a 3xx is a rejection).
    if (status >= 200 && status < 300) return { status };
    const retry = status === 408 || status === 429 || status >= 500;
    const message = `webhook POST to ${parsed.host} answered ${status}`;
    throw retry
      ? ApplicationFailure.retryable(message, "WebhookRetryableStatus")
      : ApplicationFailure.nonRetryable(message, "WebhookRejected");
  };
}
