/**
 * The one place that decides what a failed model call means. pi-ai reports a
 * failed stream as an assistant message with stopReason "error"; the HTTP
 * status (from its onResponse hook) and the message tell transient from
 * permanent. Transient failures are thrown as retryable ApplicationFailures so
 * that Temporal, and only Temporal, retries them; permanent ones are returned
 * as data and end the turn.
 */
import { ApplicationFailure } from "@temporalio/common";
import type { AssistantMessage, ProviderResponse } from "@jai/ai";

/** Failure types thrown by the model activity; all retryable. */
export const MODEL_FAILURE_TYPES = ["ModelRateLimited", "ModelOverloaded", "ModelUnavailable", "ModelStreamInterrupted"] as const;

const NETWORK_PATTERN =
  /ECONNRESET|ECONNREFUSED|EPIPE|ETIMEDOUT|EAI_AGAIN|ENOTFOUND|socket hang up|fetch failed|network|terminated|other side closed|premature close|connection (was )?(reset|closed)/i;
const OVERLOADED_PATTERN = /overloaded|529/i;
const RATE_LIMIT_PATTERN = /rate.?limit|too many requests|\b429\b/i;
const SERVER_ERROR_PATTERN = /\b5\d\d\b|internal server error|service unavailable|bad gateway|gateway timeout/i;

/** Parses `retry-after` (seconds or HTTP date) into milliseconds. */
export function retryAfterMs(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  const raw = headers?.["retry-after"] ?? headers?.["Retry-After"];
  if (!raw) return undefined;
  const seconds = Number(raw);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(raw);
  return Number.isFinite(date) ? Math.max(0, date - now) : undefined;
}

function retryable(type: (typeof MODEL_FAILURE_TYPES)[number], message: string, delayMs?: number): ApplicationFailure {
  return ApplicationFailure.create({ message, type, nonRetryable: false, ...(delayMs !== undefined ? { nextRetryDelay: delayMs } : {}) });
}

/**
 * Returns the failure to throw for a transient error, or undefined when the
 * message should be returned as it is (success, abort, or a permanent error).
 */
export function classifyModelFailure(message: AssistantMessage, response: ProviderResponse | undefined): ApplicationFailure | undefined {
  if (message.stopReason !== "error") return undefined;
  const text = message.errorMessage ?? "model call failed";
  const status = response?.status;
  const detail = status !== undefined && status !== 200 ? `HTTP ${status}: ${text}` : text;
  if (status === 429) return retryable("ModelRateLimited", detail, retryAfterMs(response?.headers));
  if (status === 529) return retryable("ModelOverloaded", detail, retryAfterMs(response?.headers));
  if (status === 408 || (status !== undefined && status >= 500)) return retryable("ModelUnavailable", detail, retryAfterMs(response?.headers));
  if (status !== undefined && status >= 400) return undefined;
  if (NETWORK_PATTERN.test(text)) return retryable("ModelStreamInterrupted", detail);
  if (status === undefined) {
    if (OVERLOADED_PATTERN.test(text)) return retryable("ModelOverloaded", detail);
    if (RATE_LIMIT_PATTERN.test(text)) return retryable("ModelRateLimited", detail);
    if (SERVER_ERROR_PATTERN.test(text)) return retryable("ModelUnavailable", detail);
  }
  return undefined;
}
