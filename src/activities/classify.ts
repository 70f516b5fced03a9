/**
 * The one place that decides what a failed model call means. pi-ai reports a
 * failed stream as an assistant message with stopReason "error"; the HTTP
 * status and headers (recorded at the fetch layer, or pi-ai's onResponse) and
 * the message tell transient from permanent. Transient failures are thrown as
 * retryable ApplicationFailures so that Temporal, and only Temporal, retries
 * them; permanent ones are returned as data with a clear errorMessage and end
 * the turn. API keys never appear in what comes out of here.
 */
import { ApplicationFailure } from "@temporalio/common";
import { isContextOverflow, type AssistantMessage } from "@jai/ai";

/** Failure types thrown by the model activity; all retryable. */
export const MODEL_FAILURE_TYPES = ["ModelRateLimited", "ModelOverloaded", "ModelUnavailable", "ModelStreamInterrupted"] as const;
export type ModelFailureType = (typeof MODEL_FAILURE_TYPES)[number];

/** What is known about the call besides the message. */
export interface CallFacts {
  provider: string;
  modelId: string;
  /** The model's context window, for overflow detection. */
  contextWindow?: number;
  /** HTTP status of the response, when one arrived. */
  status?: number;
  /** Response headers, lower-cased. */
  headers?: Record<string, string>;
  /** Set when no response arrived at all. */
  networkError?: string;
  /** Set when the response body broke off after the status arrived. */
  bodyError?: string;
  /** Strings that must never leave the worker (the API key). */
  secrets?: (string | undefined)[];
}

export type ModelOutcome = { retry: ApplicationFailure } | { message: AssistantMessage; overflow?: true };

const NETWORK_PATTERN =
  /ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|UND_ERR|socket hang up|fetch failed|network|terminated|other side closed|premature close|connection (was )?(reset|closed|error)/i;
const MALFORMED_PATTERN = /JSON|Unexpected token|Could not parse|Unexpected end|malformed/i;
const OVERLOADED_PATTERN = /overloaded/i;
const RATE_LIMIT_PATTERN = /rate.?limit|too many requests/i;
const SERVER_ERROR_PATTERN = /internal server error|service unavailable|bad gateway|gateway timeout|api_error/i;
const KEY_LIKE = /\b(sk-[A-Za-z0-9_\-*.]{6,}|AIza[0-9A-Za-z_\-]{10,})/g;

/** Environment variables @jai/ai reads keys from, to name in auth errors. */
const KEY_ENV: Record<string, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY",
  "azure-openai-responses": "AZURE_OPENAI_API_KEY",
  google: "GEMINI_API_KEY",
  groq: "GROQ_API_KEY",
  cerebras: "CEREBRAS_API_KEY",
  xai: "XAI_API_KEY",
  openrouter: "OPENROUTER_API_KEY",
  "vercel-ai-gateway": "AI_GATEWAY_API_KEY",
  zai: "ZAI_API_KEY",
  mistral: "MISTRAL_API_KEY",
  huggingface: "HF_TOKEN",
  fireworks: "FIREWORKS_API_KEY",
};

export function keyEnvVar(provider: string): string {
  return KEY_ENV[provider] ?? `${provider.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`;
}

/** Removes secrets and anything shaped like an API key. */
export function redact(text: string, secrets: (string | undefined)[] = []): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join("[redacted]");
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

function retry(type: ModelFailureType, message: string, delayMs?: number): ModelOutcome {
  return {
    retry: ApplicationFailure.create({ message, type, nonRetryable: false, ...(delayMs !== undefined ? { nextRetryDelay: delayMs } : {}) }),
  };
}

/** Decides a finished stream's fate: return its message (success or permanent error) or retry. */
export function classifyModelOutcome(message: AssistantMessage, facts: CallFacts): ModelOutcome {
  if (message.stopReason !== "error") return { message };
  const raw = redact(message.errorMessage ?? "model call failed", facts.secrets);
  const where = `${facts.provider}/${facts.modelId}`;
  const final = (errorMessage: string): ModelOutcome => ({ message: { ...message, errorMessage } });
  if (facts.networkError && facts.status === undefined) {
    return retry("ModelUnavailable", `connection to ${facts.provider} failed: ${redact(facts.networkError, facts.secrets)}`);
  }
  if (facts.bodyError && (facts.status ?? 200) < 400) {
    return retry("ModelStreamInterrupted", `stream from ${where} interrupted: ${redact(facts.bodyError, facts.secrets)}`);
  }
  const status = facts.status !== undefined && facts.status >= 400 ? facts.status : facts.status === undefined ? Number(/^(\d{3})\b/.exec(raw)?.[1]) || undefined : undefined;
  const delay = retryAfterMs(facts.headers);
  const http = status ? `HTTP ${status}: ` : "";

  if (isContextOverflow({ ...message, errorMessage: raw }, facts.contextWindow)) {
    const window = facts.contextWindow ? ` (${facts.contextWindow} tokens)` : "";
    return { ...final(`Context overflow: the conversation no longer fits ${where}'s context window${window}. ${http}${raw}`), overflow: true };
  }
  if (status === 429) return retry("ModelRateLimited", `${where} rate limited: ${http}${raw}`, delay);
  if (status === 529 || (status === 503 && OVERLOADED_PATTERN.test(raw))) return retry("ModelOverloaded", `${where} overloaded: ${http}${raw}`, delay);
  if (status === 408 || status === 425 || (status !== undefined && status >= 500)) return retry("ModelUnavailable", `${where} unavailable: ${http}${raw}`, delay);
  if (status === 401 || status === 403) {
    return final(
      `Authentication failed for provider "${facts.provider}" (${http}${raw}). Check ${keyEnvVar(facts.provider)} in the worker's environment, or the worker's getApiKey option.`,
    );
  }
  if (status === 404) return final(`Model "${facts.modelId}" not found at provider "${facts.provider}" (${http}${raw})`);
  if (status !== undefined) return final(`${where} rejected the request (${http}${raw})`);

  // A response arrived (or none was seen) and the stream broke or reported an error inside it.
  if (NETWORK_PATTERN.test(raw)) return retry("ModelStreamInterrupted", `stream from ${where} interrupted: ${raw}`);
  if (OVERLOADED_PATTERN.test(raw)) return retry("ModelOverloaded", `${where} overloaded: ${raw}`);
  if (RATE_LIMIT_PATTERN.test(raw)) return retry("ModelRateLimited", `${where} rate limited: ${raw}`);
  if (SERVER_ERROR_PATTERN.test(raw)) return retry("ModelUnavailable", `${where} unavailable: ${raw}`);
  if (facts.status === 200 && MALFORMED_PATTERN.test(raw)) return retry("ModelStreamInterrupted", `malformed stream from ${where}: ${raw}`);
  return final(raw);
}
