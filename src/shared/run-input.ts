/**
 * Structural validation of a run's input. Pure and deterministic: the workflow
 * runs it first thing and the client runs it before starting, so both reject
 * the same input with the same message naming the field.
 */
import { BUDGETS, jsonBytes, overBudget } from "./payload-limits.js";
import { messageProblem } from "./message-schema.js";
import { checkWebhookField } from "./webhook-field.js";
import { FEATURE_INPUTS } from "./feature-inputs.js";
import { isObject } from "./plain-object.js";
import { checkModel } from "./model-field.js";
import { checkActivityOptions, checkDuration } from "./activity-options.js";
import { nearestName } from "./near-name.js";

const ROLES = ["user", "assistant", "toolResult"];

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
  return checkSession(input.session) ?? checkWebhookField(input.webhook);
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
/** Fields the loop itself sets (`AgentRunWorkflowInput`): a continued run's carry, a sub-agent's depth. */
const INTERNAL_FIELDS = ["continued", "subAgentDepth"];
const REQUIRED_FIELDS = ["model", "prompt"];
const KNOWN_FIELDS: ReadonlySet<string> = new Set([...RUN_INPUT_FIELDS, ...INTERNAL_FIELDS]);

export { checkActivityOptions, checkDuration, checkRetry } from "./activity-options.js";
export { MAX_MODEL_CHAIN } from "./model-field.js";
// Edit distance and near misses live in src/shared/near-name.ts (the CLIs use them without this module).
export { editDistance, nearestName } from "./near-name.js";

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
   * Run features this input is checked as recorded before (feature-inputs.ts, by name): their `offProblem` is
   * asked instead of their `problem`. The workflow passes those a replayed run did not use. Default: none.
   */
  off?: ReadonlySet<string>;
}

/** Returns a message naming the first bad field, or undefined when the input is usable. */
export function validateRunInput(input: unknown, checks: RunInputChecks = {}): string | undefined {
  if (!isObject(input)) return "run input must be an object";
  const { prompt, continued: _continued, ...rest } = input;
  const feature = () => {
    for (const f of FEATURE_INPUTS) {
      const problem = checks.off?.has(f.name) ? f.offProblem?.(input) : f.problem?.(input);
      if (problem) return problem;
    }
    return undefined;
  };
  return (
    missingNearMiss(input) ??
    (checks.unknownFields === false ? undefined : unknownFieldProblem(input, checks.alsoNamed)) ??
    (Array.isArray(input.model) ? undefined : checkModel(input.model)) ??
    checkPrompt(prompt) ??
    checkOptional(input) ??
    feature() ??
    overBudget("prompt", jsonBytes(prompt), BUDGETS.promptBytes) ??
    overBudget("run input (without prompt)", jsonBytes(rest), BUDGETS.inputBytes)
  );
}
