/**
 * Structural validation of a run's input. Pure and deterministic: the workflow
 * runs it first thing and the client runs it before starting, so both reject
 * the same input with the same message naming the field.
 */
import { compileRetryPolicy, msToNumber } from "@temporalio/common";
import { BUDGETS, jsonBytes, overBudget } from "./budgets.js";
import { messageProblem } from "./message-schema.js";
import { approvalPolicyProblem, policyFloorProblem } from "./approval-policy.js";
import { clientToolsProblem } from "./client-tools.js";
import { runSchemasProblem } from "./run-schemas.js";
import { checkWebhookField } from "../webhooks/field.js";
import { budgetProblem } from "./spend.js";
import { isObject } from "./plain-object.js";
import { nearestName } from "../common/near-name.js";

const ROLES = ["user", "assistant", "toolResult"];

/** Most models of a fallback chain. */
export const MAX_MODEL_CHAIN = 5;

function checkModel(model: unknown, list = true): string | undefined {
  if (Array.isArray(model) && list) {
    if (model.length === 0 || model.length > MAX_MODEL_CHAIN)
      return `"model" as a fallback chain must list 1 to ${MAX_MODEL_CHAIN} models, got ${model.length}`;
    for (let i = 0; i < model.length; i++) {
      const problem = checkModel(model[i], false);
      if (problem) return problem.replace(/^"model/, `"model[${i}]`);
    }
    return undefined;
  }
  if (typeof model === "string") {
    const slash = model.indexOf("/");
    if (slash <= 0 || slash === model.length - 1)
      return `"model" must be "provider/modelId" or a Model object, got "${model}"`;
    return undefined;
  }
  if (!isObject(model))
    return `"model" must be "provider/modelId" or a Model object${list ? ", or a list of them (a fallback chain)" : ""}`;
  for (const key of ["id", "api", "provider"]) {
    if (typeof model[key] !== "string" || model[key] === "") return `"model.${key}" must be a non-empty string`;
  }
  return undefined;
}

function checkPrompt(prompt: unknown): string | undefined {
  if (typeof prompt === "string") return prompt.length === 0 ? `"prompt" must not be empty` : undefined;
  if (Array.isArray(prompt)) {
    if (prompt.length === 0) return `"prompt" must not be an empty list`;
    for (let i = 0; i < prompt.length; i++) {
      const problem = messageProblem(prompt[i], `prompt[${i}]`, ROLES);
      if (problem) return problem;
    }
    const last = prompt[prompt.length - 1] as { role: string };
    if (last.role === "assistant")
      return `"prompt" must not end with an assistant message: the model needs a user message or tool result to answer`;
    return undefined;
  }
  if (typeof prompt !== "object" || prompt === null)
    return `"prompt" must be a string, a user message or a list of messages`;
  return messageProblem(prompt, "prompt");
}

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

function checkOptional(input: Record<string, unknown>): string | undefined {
  if (input.systemPrompt !== undefined && typeof input.systemPrompt !== "string")
    return `"systemPrompt" must be a string`;
  if (input.tools !== undefined) {
    if (!Array.isArray(input.tools) || input.tools.some((t) => typeof t !== "string"))
      return `"tools" must be an array of tool names`;
  }
  if (input.toolExecution !== undefined && input.toolExecution !== "parallel" && input.toolExecution !== "sequential") {
    return `"toolExecution" must be "parallel" or "sequential"`;
  }
  if (input.maxTurns !== undefined) {
    const n = input.maxTurns;
    if (typeof n !== "number" || !Number.isInteger(n) || n < 1) return `"maxTurns" must be a positive integer`;
  }
  const activity =
    checkActivityOptions(input.modelActivity, "modelActivity") ??
    checkDuration(input.approvalTimeout, "approvalTimeout");
  if (activity) return activity;
  const limits = input.toolResultLimits;
  if (limits !== undefined) {
    if (!isObject(limits)) return `"toolResultLimits" must be an object`;
    for (const [key, value] of Object.entries(limits)) {
      if (!["maxBytes", "maxLines", "maxImageBytes", "maxDetailsBytes"].includes(key))
        return `"toolResultLimits.${key}" is not a known limit`;
      if (typeof value !== "number" || !Number.isInteger(value) || value < 1)
        return `"toolResultLimits.${key}" must be a positive integer`;
    }
  }
  const budget = input.contextBudgetTokens;
  if (budget !== undefined && (typeof budget !== "number" || !Number.isInteger(budget) || budget < 1))
    return `"contextBudgetTokens" must be a positive integer`;
  if (input.compaction !== undefined && input.compaction !== "truncate-tool-results" && input.compaction !== "worker") {
    return `"compaction" must be "truncate-tool-results" or "worker"`;
  }
  const depth = input.subAgentDepth;
  if (depth !== undefined && (typeof depth !== "number" || !Number.isInteger(depth) || depth < 0))
    return `"subAgentDepth" must be a non-negative integer`;
  const can = input.continueAsNew;
  if (can !== undefined) {
    if (!isObject(can)) return `"continueAsNew" must be an object`;
    const n = can.afterTurns;
    if (n !== undefined && (typeof n !== "number" || !Number.isInteger(n) || n < 1))
      return `"continueAsNew.afterTurns" must be a positive integer`;
  }
  if (input.approvalPolicy !== undefined) {
    const policy = approvalPolicyProblem(input.approvalPolicy);
    if (policy) return policy;
  }
  if (input.approvalPolicyFloor !== undefined) {
    const floor = policyFloorProblem(input.approvalPolicyFloor);
    if (floor) return floor;
  }
  if (input.clientTools !== undefined) {
    const client = clientToolsProblem(input.clientTools, checkDuration);
    if (client) return client;
  }
  return checkSession(input.session) ?? checkWebhookField(input.webhook);
}

/** Typed results: `output` a JSON Schema object, `outputRetries` a non-negative integer, only with `output`. */
function checkOutput(input: Record<string, unknown>): string | undefined {
  const schema = input.output;
  if (schema !== undefined) {
    if (!isObject(schema)) return `"output" must be a JSON Schema object (e.g. a TypeBox schema)`;
    const type = schema.type;
    if (
      type !== undefined &&
      typeof type !== "string" &&
      !(Array.isArray(type) && type.every((t) => typeof t === "string"))
    )
      return `"output.type" must be a JSON Schema type name or a list of them`;
  }
  const retries = input.outputRetries;
  if (retries === undefined) return undefined;
  if (typeof retries !== "number" || !Number.isInteger(retries) || retries < 0)
    return `"outputRetries" must be a non-negative integer`;
  return schema === undefined ? `"outputRetries" needs "output" (the schema of the typed result)` : undefined;
}

/** Checks a message a person sends in (steer, follow-up, prompt): text or a user message, within its byte budget. */
export function validateUserInput(value: unknown, field = "message"): string | undefined {
  const shape =
    typeof value === "string"
      ? value.length === 0
        ? `"${field}" must not be empty`
        : undefined
      : messageProblem(value, field);
  return shape ?? overBudget(field, jsonBytes(value), BUDGETS.messageBytes);
}

function checkSession(session: unknown): string | undefined {
  if (session === undefined || typeof session === "boolean") return undefined;
  if (!isObject(session)) return `"session" must be a boolean or { idleTimeout }`;
  return checkDuration(session.idleTimeout, "session.idleTimeout");
}

/** The fields of a run's input (`AgentRunInput`), in the order they are documented. */
export const RUN_INPUT_FIELDS = [
  "model",
  "prompt",
  "systemPrompt",
  "tools",
  "toolExecution",
  "maxTurns",
  "budget",
  "modelActivity",
  "session",
  "approvalTimeout",
  "approvalPolicy",
  "approvalPolicyFloor",
  "clientTools",
  "toolResultLimits",
  "contextBudgetTokens",
  "compaction",
  "continueAsNew",
  "webhook",
  "output",
  "outputRetries",
] as const;
/** The fields of typed results: runs recorded before them treat them as unknown (see TYPED_OUTPUT_PATCH). */
export const TYPED_OUTPUT_FIELDS: readonly string[] = ["output", "outputRetries"];
/** Budgets: runs recorded before them treat the field as unknown (see BUDGET_PATCH). */
export const BUDGET_FIELDS: readonly string[] = ["budget"];
/** A policy floor: runs recorded before it treat the field as unknown (see POLICY_FLOOR_PATCH). */
export const POLICY_FLOOR_FIELDS: readonly string[] = ["approvalPolicyFloor"];
/** Fields the loop itself sets (`AgentRunWorkflowInput`): a continued run's carry, a sub-agent's depth. */
const INTERNAL_FIELDS = ["continued", "subAgentDepth"];
const REQUIRED_FIELDS = ["model", "prompt"];
const KNOWN_FIELDS: ReadonlySet<string> = new Set([...RUN_INPUT_FIELDS, ...INTERNAL_FIELDS]);

// Edit distance and near misses live in src/common/near-name.ts (the CLIs use them without this module).
export { editDistance, nearestName } from "../common/near-name.js";

function unknownField(field: string, names: readonly string[]): string {
  const near = nearestName(field, names);
  return near
    ? `unknown field "${field}" — did you mean "${near}"?`
    : `unknown field "${field}" (run input fields: ${RUN_INPUT_FIELDS.join(", ")})`;
}

/** A required field that is missing while a near-miss of it is present: both named (e.g. "promt" for "prompt"). */
function missingNearMiss(input: Record<string, unknown>): string | undefined {
  const unknown = Object.keys(input).filter((k) => !KNOWN_FIELDS.has(k));
  for (const field of REQUIRED_FIELDS) {
    if (input[field] !== undefined) continue;
    const typo = unknown.find((k) => nearestName(k, [...KNOWN_FIELDS]) === field);
    if (typo) return `unknown field "${typo}" — did you mean "${field}"? ("${field}" is required and missing)`;
  }
  return undefined;
}

/**
 * The first field of the input that no run input has, with the known field it most likely misspells; undefined
 * when every field is known. `alsoNamed`: more names to suggest (a caller's own options, e.g. startAgentRun's).
 */
export function unknownFieldProblem(
  input: unknown,
  alsoNamed: readonly string[] = [],
  /** Known fields to treat as unknown (a run that replays as recorded before they existed). */
  unknownToo: readonly string[] = [],
): string | undefined {
  if (!isObject(input)) return undefined;
  const field = Object.keys(input).find((k) => !KNOWN_FIELDS.has(k) || unknownToo.includes(k));
  return field === undefined ? undefined : unknownField(field, [...RUN_INPUT_FIELDS, ...alsoNamed]);
}

export interface RunInputChecks {
  /**
   * Refuse fields no run input has (default true). The workflow passes false and refuses them itself, behind a
   * patch: runs recorded before the check may hold such fields, and their replay must not fail.
   */
  unknownFields?: boolean;
  /** More names to suggest for an unknown field (a caller's own options, e.g. startAgentRun's). */
  alsoNamed?: readonly string[];
  /**
   * Check the typed-result fields (default true). The workflow passes false for a run that replays as
   * recorded before them (see TYPED_OUTPUT_PATCH).
   */
  output?: boolean;
  /**
   * Accept `model` as a list, a fallback chain (default true). The workflow passes false for a run that replays
   * as recorded before chains (see MODEL_CHAIN_PATCH): such a list was refused then.
   */
  modelChain?: boolean;
  /**
   * Check `budget` (default true). The workflow passes false for a run that replays as recorded before budgets
   * (see BUDGET_PATCH): such a field was ignored or refused as unknown then.
   */
  budget?: boolean;
  /**
   * Check the run's own schemas (typed `output`, client tools' `parameters` and `result`: local references
   * only, RE2 patterns; default true). The workflow passes false for a run that replays as recorded before the
   * check (see RUN_SCHEMAS_PATCH): such schemas were accepted then.
   */
  schemas?: boolean;
}

/** Returns a message naming the first bad field, or undefined when the input is usable. */
export function validateRunInput(input: unknown, checks: RunInputChecks = {}): string | undefined {
  if (!isObject(input)) return "run input must be an object";
  const { prompt, continued: _continued, ...rest } = input;
  return (
    missingNearMiss(input) ??
    (checks.unknownFields === false ? undefined : unknownFieldProblem(input, checks.alsoNamed)) ??
    checkModel(input.model, checks.modelChain !== false) ??
    checkPrompt(prompt) ??
    checkOptional(input) ??
    (checks.output === false ? undefined : checkOutput(input)) ??
    (checks.budget === false ? undefined : budgetProblem(input.budget)) ??
    (checks.schemas === false ? undefined : runSchemasProblem(input)) ??
    overBudget("prompt", jsonBytes(prompt), BUDGETS.promptBytes) ??
    overBudget("run input (without prompt)", jsonBytes(rest), BUDGETS.inputBytes)
  );
}
