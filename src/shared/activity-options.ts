/**
 * Checks of durations, retry policies and activity options as Temporal reads them: pure, shared by the run's
 * input (run-input.ts), the client-tool declarations and the worker's tool settings (worker/activities/setup.ts).
 */
import { compileRetryPolicy, msToNumber } from "@temporalio/common";
import { isObject } from "./plain-object.js";

/**
 * A duration as Temporal reads it (ms number or an `ms` string like "30s"),
 * positive and finite: what the SDK would throw on inside the workflow task,
 * retried forever, is refused here instead.
 */
export function checkDuration(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" && typeof value !== "number")
    return `"${field}" must be a duration (milliseconds, or a string like "30s")`;
  let ms: number;
  try {
    ms = msToNumber(value as never);
  } catch {
    return `"${field}" is not a duration: ${JSON.stringify(value)} (use milliseconds, or a string like "30s")`;
  }
  if (!Number.isFinite(ms) || ms <= 0) return `"${field}" must be a positive duration, got ${JSON.stringify(value)}`;
  return undefined;
}

const RETRY_KEYS = [
  "initialInterval",
  "backoffCoefficient",
  "maximumInterval",
  "maximumAttempts",
  "nonRetryableErrorTypes",
];

/** A retry policy Temporal accepts (its own compileRetryPolicy decides), as plain JSON. */
export function checkRetry(retry: unknown, field: string): string | undefined {
  if (retry === undefined) return undefined;
  if (!isObject(retry)) return `"${field}" must be an object`;
  for (const key of Object.keys(retry)) if (!RETRY_KEYS.includes(key)) return `"${field}.${key}" is not a retry option`;
  const problem =
    checkDuration(retry.initialInterval, `${field}.initialInterval`) ??
    checkDuration(retry.maximumInterval, `${field}.maximumInterval`);
  if (problem) return problem;
  const attempts = retry.maximumAttempts;
  if (attempts !== undefined && (typeof attempts !== "number" || !Number.isInteger(attempts) || attempts < 1)) {
    return `"${field}.maximumAttempts" must be a positive integer`;
  }
  const coefficient = retry.backoffCoefficient;
  if (
    coefficient !== undefined &&
    (typeof coefficient !== "number" || !Number.isFinite(coefficient) || coefficient < 1)
  ) {
    return `"${field}.backoffCoefficient" must be a number ≥ 1`;
  }
  const types = retry.nonRetryableErrorTypes;
  if (types !== undefined && (!Array.isArray(types) || types.some((t) => typeof t !== "string")))
    return `"${field}.nonRetryableErrorTypes" must be a list of strings`;
  try {
    compileRetryPolicy(retry as never);
  } catch (err) {
    return `"${field}": ${(err as Error).message}`;
  }
  return undefined;
}

/** Timeouts and retry policy of an activity (the model's, or a tool's). */
export function checkActivityOptions(options: unknown, field: string): string | undefined {
  if (options === undefined) return undefined;
  if (!isObject(options)) return `"${field}" must be an object`;
  for (const key of Object.keys(options)) {
    if (!["startToCloseTimeout", "heartbeatTimeout", "retry"].includes(key))
      return `"${field}.${key}" is not an activity option`;
  }
  return (
    checkDuration(options.startToCloseTimeout, `${field}.startToCloseTimeout`) ??
    checkDuration(options.heartbeatTimeout, `${field}.heartbeatTimeout`) ??
    checkRetry(options.retry, `${field}.retry`)
  );
}
