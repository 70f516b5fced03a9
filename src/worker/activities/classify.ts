/**
 * The one place that decides what a failed model call means. pi-ai reports a
 * failed stream as an assistant message with stopReason "error"; the HTTP
 * status and headers (recorded at the fetch layer, or pi-ai's onResponse) and
 * the message tell transient from permanent. Transient failures are thrown as
 * retryable ApplicationFailures so that Temporal, and only Temporal, retries
 * them; permanent ones are returned as data with a clear errorMessage and end
 * the turn. What the provider says (its error type or code, in an error body
 * or inside a stream) wins over the HTTP status: OpenAI answers "out of
 * credit" with a 429, Anthropic reports overload inside a 200 stream. API keys
 * never appear in what comes out of here.
 */
import { hostname } from "node:os";
import { ApplicationFailure } from "@temporalio/common";
import { isContextOverflow, type AssistantMessage } from "@jai/ai";
import { FailureType } from "../../shared/failure-types.js";
import type { ProviderCallRecord } from "./provider-fetch.js";

/** Failure types thrown by the model activity; all retryable. */
export const MODEL_FAILURE_TYPES = [
  "ModelRateLimited",
  "ModelOverloaded",
  "ModelUnavailable",
  "ModelStreamInterrupted",
] as const;
export type ModelFailureType = (typeof MODEL_FAILURE_TYPES)[number];

/** What is known about the call besides the message: what the fetch layer (or pi-ai's onResponse) saw, and more. */
export interface CallFacts
  extends Pick<ProviderCallRecord, "status" | "headers" | "networkError" | "bodyError" | "providerError"> {
  provider: string;
  modelId: string;
  /** The model's context window, for overflow detection. */
  contextWindow?: number;
  /** Strings that must never leave the worker (the API key). */
  secrets?: (string | undefined)[];
}

/** A provider's error object, whatever its wire format (OpenAI `{error: {type, code, message}}`, Anthropic `{type: "error", error: {type, message}}`). */
export interface ProviderError {
  type?: string;
  code?: string;
  message?: string;
  /** It arrived inside a stream that had started with HTTP 200. */
  inStream?: boolean;
}

/** Reads a provider's error object out of a parsed error body or stream event; undefined when it holds none. */
export function providerErrorOf(body: unknown, inStream = false): ProviderError | undefined {
  const error = (body as { error?: unknown } | null | undefined)?.error;
  const text = (v: unknown) => (typeof v === "string" && v !== "" ? v : typeof v === "number" ? String(v) : undefined);
  const where = inStream ? { inStream: true } : {};
  if (typeof error === "string") return { message: error, ...where };
  if (!error || typeof error !== "object") return undefined;
  const e = error as Record<string, unknown>;
  const out: ProviderError = { ...where };
  if (text(e.type)) out.type = text(e.type);
  if (text(e.code)) out.code = text(e.code);
  if (text(e.message)) out.message = text(e.message);
  return out.type || out.code || out.message ? out : undefined;
}

export type ModelOutcome =
  | { retry: ApplicationFailure }
  | {
      message: AssistantMessage;
      overflow?: true;
      /** The provider says the model does not exist (any more): a fallback chain's next model may take the call. */
      gone?: true;
    };

const NETWORK_PATTERN =
  /ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|UND_ERR|socket hang up|fetch failed|network|terminated|other side closed|premature close|connection (was )?(reset|closed|error)/i;
const MALFORMED_PATTERN = /JSON|Unexpected token|Could not parse|Unexpected end|malformed/i;
const OVERLOADED_PATTERN = /overloaded/i;
const RATE_LIMIT_PATTERN = /rate.?limit|too many requests/i;
const SERVER_ERROR_PATTERN = /internal server error|service unavailable|bad gateway|gateway timeout|api_error/i;
const KEY_LIKE =
  /\b((?:sk|xai|csk|fw|pk)-[A-Za-z0-9_\-*.]{6,}|(?:gsk|hf|fw|sk_live|sk_test|ghp|github_pat)_[A-Za-z0-9_\-*.]{6,}|AIza[0-9A-Za-z_\-]{10,})/g;

/**
 * Environment variables @jai/ai reads a provider's key from (its getEnvApiKey), the usual one first. Providers
 * not listed take other credentials (Vertex ADC, AWS profiles and roles) or none (the worker's own APIs).
 */
const KEY_ENV: Record<string, string[]> = {
  anthropic: ["ANTHROPIC_API_KEY", "ANTHROPIC_OAUTH_TOKEN"],
  "github-copilot": ["COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"],
  openai: ["OPENAI_API_KEY"],
  "azure-openai-responses": ["AZURE_OPENAI_API_KEY"],
  google: ["GEMINI_API_KEY"],
  groq: ["GROQ_API_KEY"],
  cerebras: ["CEREBRAS_API_KEY"],
  xai: ["XAI_API_KEY"],
  openrouter: ["OPENROUTER_API_KEY"],
  "vercel-ai-gateway": ["AI_GATEWAY_API_KEY"],
  zai: ["ZAI_API_KEY"],
  mistral: ["MISTRAL_API_KEY"],
  minimax: ["MINIMAX_API_KEY"],
  "minimax-cn": ["MINIMAX_CN_API_KEY"],
  huggingface: ["HF_TOKEN"],
  fireworks: ["FIREWORKS_API_KEY"],
  opencode: ["OPENCODE_API_KEY"],
  "opencode-go": ["OPENCODE_API_KEY"],
  "kimi-coding": ["KIMI_API_KEY"],
};

/** The variables a provider's key is read from; undefined for a provider whose calls need no key from the environment. */
export function keyEnvVars(provider: string): string[] | undefined {
  return KEY_ENV[provider];
}

export function keyEnvVar(provider: string): string {
  return KEY_ENV[provider]?.[0] ?? `${provider.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`;
}

/** The worker a failure happened on, as its messages name it. */
export interface WorkerWhere {
  /** The worker's identity (Temporal's: `pid@host` unless set). */
  identity?: string;
  /** The task queue the activity came from. */
  taskQueue: string;
}

/** "worker <identity> (task queue <queue>)". */
export const onWorker = (where: WorkerWhere) =>
  `worker ${where.identity ?? `${process.pid}@${hostname()}`} (task queue ${where.taskQueue})`;

/**
 * A model whose provider needs a key, on a worker that has none for it (nothing from its getApiKey, nothing in
 * the variables @jai/ai reads): permanent, and found before anything is sent. Names what to set, and where.
 */
export function missingApiKeyFailure(provider: string, modelId: string, where: WorkerWhere): ApplicationFailure {
  const [first, ...others] = keyEnvVars(provider) ?? [keyEnvVar(provider)];
  const vars = others.length > 0 ? `${first} (or ${others.join(" or ")})` : first;
  return ApplicationFailure.nonRetryable(
    `no API key for provider "${provider}" on ${onWorker(where)}: set ${vars} in the worker's environment, ` +
      `or return a key from its getApiKey option (model ${provider}/${modelId}; the request was not sent)`,
    FailureType.ModelApiKeyMissing,
  );
}

/**
 * A model of an api this worker lacks while another worker of the queue may have it (workers whose config
 * modules differ): retryable unless `final`, so that another worker can take the call (after `retryDelayMs`
 * when given, else the activity's backoff). Names the model, the api and the worker, and the rule: every worker
 * of a task queue must serve the same models.
 */
export function modelNotServedFailure(
  model: { provider: string; id: string },
  api: string,
  where: WorkerWhere,
  final: boolean,
  retryDelayMs?: number,
): ApplicationFailure {
  const lacks = `${onWorker(where)} cannot serve model "${model.provider}/${model.id}": no provider for its api "${api}" is registered in this worker`;
  return ApplicationFailure.create({
    message:
      `${lacks}. Every worker of a task queue must serve the same models: register the provider ` +
      `(registerApiProvider / registerFauxProvider in the worker's config module) and its models in each worker of ${where.taskQueue}`,
    type: FailureType.ModelNotServed,
    nonRetryable: final,
    ...(final || retryDelayMs === undefined ? {} : { nextRetryDelay: retryDelayMs }),
  });
}

/** Shortest piece of a secret that is redacted wherever it appears. */
const FRAGMENT = 8;

/**
 * The forms a secret can be echoed in: as it is, URL-encoded, and base64
 * (standard and URL-safe) at each of the three byte alignments it can have
 * inside a larger base64 text, less the characters that depend on its neighbours.
 */
function secretForms(secret: string): string[] {
  const forms = new Set([secret, encodeURIComponent(secret)]);
  const bytes = Buffer.from(secret, "utf8");
  for (let offset = 0; offset < 3; offset++) {
    let b64 = Buffer.concat([Buffer.alloc(offset), bytes])
      .toString("base64")
      .replace(/=+$/, "");
    if ((offset + bytes.length) % 3 !== 0) b64 = b64.slice(0, -1); // the last character mixes in what follows
    if (offset > 0) b64 = b64.slice(Math.ceil((offset * 4) / 3)); // the first ones mix in what precedes
    forms.add(b64);
    forms.add(b64.replace(/\+/g, "-").replace(/\//g, "_"));
  }
  return [...forms].filter((f) => f.length >= FRAGMENT);
}

/**
 * Removes the secrets (the API keys the worker resolved) in every form and
 * any piece of them of 8 or more characters, and anything shaped like a
 * well-known provider key.
 */
export function redact(text: string, secrets: (string | undefined)[] = []): string {
  const windows = new Set<string>();
  for (const secret of secrets) {
    if (!secret || secret.length < FRAGMENT) continue;
    for (const form of secretForms(secret))
      for (let i = 0; i + FRAGMENT <= form.length; i++) windows.add(form.slice(i, i + FRAGMENT));
  }
  let out = text;
  if (windows.size > 0) {
    const covered = new Uint8Array(text.length);
    for (let i = 0; i + FRAGMENT <= text.length; i++)
      if (windows.has(text.slice(i, i + FRAGMENT))) covered.fill(1, i, i + FRAGMENT);
    out = "";
    for (let i = 0; i < text.length; ) {
      if (!covered[i]) out += text[i++];
      else {
        while (i < text.length && covered[i]) i++;
        out += "[redacted]";
      }
    }
  }
  return out.replace(KEY_LIKE, "[redacted key]");
}

/** Parses `retry-after-ms`, or `retry-after` (seconds or HTTP date), into milliseconds. */
export function retryAfterMs(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.["retry-after-ms"]);
  if (headers?.["retry-after-ms"] !== undefined && Number.isFinite(ms)) return Math.max(0, ms);
  const raw = headers?.["retry-after"] ?? headers?.["Retry-After"];
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

/**
 * The longest retry delay a provider's Retry-After sets. Temporal's `nextRetryDelay` overrides the retry policy's
 * backoff and its maximumInterval, so a provider (or a proxy) answering "Retry-After: 86400" would otherwise park
 * the call for a day, and a fallback chain would never reach its next model.
 */
export const MAX_RETRY_AFTER_MS = 60_000;

function retry(type: ModelFailureType, message: string, delayMs?: number): ModelOutcome {
  return {
    retry: ApplicationFailure.create({
      message,
      type,
      nonRetryable: false,
      ...(delayMs !== undefined ? { nextRetryDelay: Math.min(Math.max(0, delayMs), MAX_RETRY_AFTER_MS) } : {}),
    }),
  };
}

/** Provider error types and codes that no retry can fix, whatever the HTTP status says. */
const OUT_OF_CREDIT = new Set([
  "insufficient_quota",
  "credit_balance_exhausted",
  "organization_spend_limit_exceeded",
  "project_spend_limit_exceeded",
  "organization_usage_limit_exceeded",
  "billing_hard_limit_reached",
  "billing_not_active",
  "billing_error",
]);
const CONTEXT_TOO_LONG = new Set([
  "context_length_exceeded",
  "request_too_large",
  "string_above_max_length",
  "prompt_too_long",
]);
const AUTH = new Set([
  "authentication_error",
  "invalid_api_key",
  "incorrect_api_key",
  "invalid_authentication",
  "account_deactivated",
]);
const PERMISSION = new Set([
  "permission_error",
  "permission_denied",
  "unsupported_country_region_territory",
  "model_not_available",
]);
const NOT_FOUND = new Set(["not_found_error", "model_not_found"]);
const INVALID = new Set([
  "invalid_request_error",
  "invalid_request",
  "bad_request",
  "invalid_value",
  "unsupported_parameter",
]);
const RATE_LIMITED = new Set([
  "rate_limit_error",
  "rate_limit_exceeded",
  "rate_limited",
  "requests",
  "tokens",
  "slow_down",
]);
const OVERLOADED = new Set(["overloaded_error", "server_is_overloaded", "engine_overloaded", "overloaded"]);
const UNAVAILABLE = new Set([
  "api_error",
  "server_error",
  "internal_error",
  "internal_server_error",
  "timeout_error",
  "service_unavailable",
]);

/**
 * What a provider's error type or code says, most specific first (OpenAI puts
 * "insufficient_quota" in type or code). "invalid" and "unavailable" are the
 * generic 4xx and 5xx types (Anthropic uses invalid_request_error for unlisted
 * 4xx statuses): a status that says more wins over them.
 */
function kindOf(
  error: ProviderError | undefined,
):
  | "credit"
  | "context"
  | "auth"
  | "permission"
  | "notFound"
  | "invalid"
  | "rate"
  | "overloaded"
  | "unavailable"
  | undefined {
  const names = [error?.code, error?.type].filter((n): n is string => n !== undefined).map((n) => n.toLowerCase());
  const has = (set: Set<string>) => names.some((n) => set.has(n));
  if (has(OUT_OF_CREDIT)) return "credit";
  if (has(CONTEXT_TOO_LONG)) return "context";
  if (has(AUTH)) return "auth";
  if (has(PERMISSION)) return "permission";
  if (has(NOT_FOUND)) return "notFound";
  if (has(RATE_LIMITED)) return "rate";
  if (has(OVERLOADED)) return "overloaded";
  if (has(UNAVAILABLE)) return "unavailable";
  if (has(INVALID)) return "invalid";
  return undefined;
}

/** Decides a finished stream's fate: return its message (success or permanent error) or retry. */
export function classifyModelOutcome(message: AssistantMessage, facts: CallFacts): ModelOutcome {
  if (message.stopReason !== "error") return { message };
  const secrets = facts.secrets;
  const said = facts.providerError;
  // The provider's own words when it sent some (the SDK's message may have lost them, e.g. inside a stream).
  const raw = redact(
    said?.message && !(message.errorMessage ?? "").includes(said.message)
      ? said.message
      : (message.errorMessage ?? "model call failed"),
    secrets,
  );
  const where = `${facts.provider}/${facts.modelId}`;
  const final = (errorMessage: string): ModelOutcome => ({ message: { ...message, errorMessage } });
  if (facts.networkError && facts.status === undefined) {
    return retry("ModelUnavailable", `connection to ${facts.provider} failed: ${redact(facts.networkError, secrets)}`);
  }
  const status =
    facts.status !== undefined && facts.status >= 400
      ? facts.status
      : facts.status === undefined
        ? Number(/^(\d{3})\b/.exec(raw)?.[1]) || undefined
        : undefined;
  const delay = retryAfterMs(facts.headers);
  const http = status ? `HTTP ${status}: ` : said?.inStream ? "in the stream: " : "";
  const kind = kindOf(said);
  const named = said?.code ?? said?.type;
  const what = `${http}${named && !raw.includes(named) ? `${named}: ` : ""}${raw}`;
  const authFailed = () =>
    final(
      `Authentication failed for provider "${facts.provider}" (${what}). Check ${keyEnvVar(facts.provider)} in the worker's environment, or the worker's getApiKey option.`,
    );
  const notFound = (): ModelOutcome => ({
    ...final(`Model "${facts.modelId}" not found at provider "${facts.provider}" (${what})`),
    gone: true,
  });

  if (
    kind === "context" ||
    (kind !== "rate" && isContextOverflow({ ...message, errorMessage: raw }, facts.contextWindow))
  ) {
    const window = facts.contextWindow ? ` (${facts.contextWindow} tokens)` : "";
    return {
      ...final(`Context overflow: the conversation no longer fits ${where}'s context window${window}. ${what}`),
      overflow: true,
    };
  }
  switch (kind) {
    case "credit":
      return final(
        `${where}: the account is out of credit or over its spending limit (${what}). Retrying will not help until billing is fixed.`,
      );
    case "auth":
      return authFailed();
    case "permission":
      return final(
        `Provider "${facts.provider}" refused access to model "${facts.modelId}" (${what}). Check the key's permissions.`,
      );
    case "notFound":
      return notFound();
    case "rate":
      return retry("ModelRateLimited", `${where} rate limited: ${what}`, delay);
    case "overloaded":
      return retry("ModelOverloaded", `${where} overloaded: ${what}`, delay);
  }
  if (facts.bodyError && (facts.status ?? 200) < 400) {
    return retry("ModelStreamInterrupted", `stream from ${where} interrupted: ${redact(facts.bodyError, secrets)}`);
  }
  if (status === 429) return retry("ModelRateLimited", `${where} rate limited: ${what}`, delay);
  if (status === 529 || (status === 503 && OVERLOADED_PATTERN.test(raw)))
    return retry("ModelOverloaded", `${where} overloaded: ${what}`, delay);
  if (status === 408 || status === 425 || (status !== undefined && status >= 500))
    return retry("ModelUnavailable", `${where} unavailable: ${what}`, delay);
  if (status === 401 || status === 403) return authFailed();
  if (status === 402)
    return final(`${where}: payment required (${what}). Retrying will not help until billing is fixed.`);
  if (status === 404) return notFound();
  if (status !== undefined) return final(`${where} rejected the request (${what})`);

  // A response arrived (or none was seen) and the stream broke or reported an error inside it.
  if (kind === "unavailable") return retry("ModelUnavailable", `${where} unavailable: ${what}`, delay);
  if (kind === "invalid") return final(`${where} rejected the request (${what})`);
  if (NETWORK_PATTERN.test(raw)) return retry("ModelStreamInterrupted", `stream from ${where} interrupted: ${raw}`);
  if (OVERLOADED_PATTERN.test(raw)) return retry("ModelOverloaded", `${where} overloaded: ${raw}`);
  if (RATE_LIMIT_PATTERN.test(raw)) return retry("ModelRateLimited", `${where} rate limited: ${raw}`);
  if (SERVER_ERROR_PATTERN.test(raw)) return retry("ModelUnavailable", `${where} unavailable: ${raw}`);
  if (facts.status === 200 && MALFORMED_PATTERN.test(raw))
    return retry("ModelStreamInterrupted", `malformed stream from ${where}: ${raw}`);
  if (said?.inStream) return final(`${where} reported an error in the stream: ${what}`);
  return final(raw);
}

/** A stream that received nothing for too long: retried (the watchdog in the model activity noticed it). */
export function stalledFailure(provider: string, modelId: string, stallMs: number): ApplicationFailure {
  return ApplicationFailure.retryable(
    `no data from ${provider}/${modelId} for ${stallMs} ms: stream stalled`,
    FailureType.ModelStreamInterrupted,
  );
}

/** A model the worker cannot serve (no provider registered for its api): permanent. */
export function unsupportedModelFailure(
  provider: string,
  modelId: string,
  err: unknown,
  secrets: (string | undefined)[] = [],
): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `Cannot call model ${provider}/${modelId}: ${redact(err instanceof Error ? err.message : String(err), secrets)}`,
    FailureType.ModelUnsupported,
  );
}

/** The model is gone at its provider: permanent for this model (the workflow falls back to the next of its chain). */
export function modelGoneFailure(message: AssistantMessage): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message.errorMessage ?? "model not found", FailureType.ModelGone);
}

/** A context overflow: the workflow compacts the context and calls once more; its own message if that does not help. */
export function overflowFailure(message: AssistantMessage): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message.errorMessage ?? "context overflow", FailureType.ContextOverflow);
}
