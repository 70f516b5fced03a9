/**
 * Client-side tools: declared in the run's input with a schema and no worker implementation; a call waits
 * until a client submits its result. Pure and deterministic: the run's update validator checks a submitted
 * result against the tool's result schema with `schemaProblem` (a JSON Schema subset, no code generation), the
 * client and `startAgentRun` check declarations with `clientToolsProblem`.
 */
import type { ClientToolDeclaration } from "../contracts.js";
import type { ExecuteToolOutput, ToolSpec } from "./wire.js";
import { BUDGETS, jsonBytes, overBudget } from "./budgets.js";
import { isObject } from "./plain-object.js";

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_CLIENT_TOOLS = 64;

/**
 * Why `value` is not a list of client tool declarations (naming the field), or undefined. `checkTimeout`: the
 * run input's duration check (input.ts passes its own, which this file does not import).
 */
export function clientToolsProblem(
  value: unknown,
  checkTimeout: (value: unknown, field: string) => string | undefined,
  field = "clientTools",
): string | undefined {
  if (!Array.isArray(value))
    return `"${field}" must be an array of { name, description, parameters, result?, timeout? }`;
  if (value.length > MAX_CLIENT_TOOLS) return `"${field}" declares ${value.length} tools; at most ${MAX_CLIENT_TOOLS}`;
  const seen = new Set<string>();
  for (let i = 0; i < value.length; i++) {
    const tool: unknown = value[i];
    const at = `${field}[${i}]`;
    if (!isObject(tool)) return `"${at}" must be an object { name, description, parameters, result?, timeout? }`;
    for (const key of Object.keys(tool))
      if (!["name", "description", "parameters", "result", "timeout"].includes(key))
        return `"${at}.${key}" is not a client tool field (name, description, parameters, result, timeout)`;
    if (typeof tool.name !== "string" || !NAME.test(tool.name))
      return `"${at}.name" must be 1-64 letters, digits, "_" or "-"`;
    if (seen.has(tool.name)) return `"${at}.name": "${tool.name}" is declared twice`;
    seen.add(tool.name);
    if (typeof tool.description !== "string") return `"${at}.description" must be a string`;
    if (!isObject(tool.parameters) || (tool.parameters.type !== undefined && tool.parameters.type !== "object"))
      return `"${at}.parameters" must be a JSON schema of an object`;
    if (tool.result !== undefined && !isObject(tool.result)) return `"${at}.result" must be a JSON schema (an object)`;
    const timeout = checkTimeout(tool.timeout, `${at}.timeout`);
    if (timeout) return timeout;
  }
  return undefined;
}

/** The run's client tools as tool specs: offered to the model like the worker's, answered by a client. */
export function clientToolSpecs(tools: ClientToolDeclaration[]): ToolSpec[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description,
    parameters: t.parameters as ToolSpec["parameters"],
    client: {
      ...(t.result !== undefined ? { result: t.result } : {}),
      ...(t.timeout !== undefined ? { timeout: t.timeout } : {}),
    },
  }));
}

/** Why a submitted result is refused (missing, too big, or not what the tool's result `schema` says), or undefined. */
export function clientResultProblem(
  schema: Record<string, unknown> | undefined,
  result: unknown,
  isError: boolean,
): string | undefined {
  if (result === undefined) return `"result" is missing`;
  const size = overBudget("result", jsonBytes(result), BUDGETS.messageBytes);
  if (size) return size;
  return isError || !schema ? undefined : schemaProblem(schema, result, "result");
}

/** The call's output from a submitted result: text as is, anything else as JSON (structured results in `details`). */
export function clientResultOutput(result: unknown, isError: boolean): ExecuteToolOutput {
  const text = typeof result === "string" ? result : JSON.stringify(result);
  return {
    result: { content: [{ type: "text", text }], details: typeof result === "string" ? {} : { result } },
    isError,
  };
}

const typeOf = (v: unknown): string =>
  v === null
    ? "null"
    : Array.isArray(v)
      ? "array"
      : typeof v === "number" && Number.isInteger(v)
        ? "integer"
        : typeof v;

function hasType(value: unknown, type: unknown): boolean {
  const actual = typeOf(value);
  const types = Array.isArray(type) ? type : [type];
  return types.some((t) => t === actual || (t === "number" && actual === "integer"));
}

/**
 * Why `value` does not satisfy the JSON schema `schema` (the first problem, naming its path under `path`), or
 * undefined. The keywords listed on `ClientToolDeclaration.result` are checked; others are ignored.
 */
export function schemaProblem(schema: unknown, value: unknown, path = "value"): string | undefined {
  if (schema === true || schema === undefined) return undefined;
  if (schema === false) return `"${path}" is not allowed`;
  if (!isObject(schema)) return undefined;
  const s = schema;
  if (s.const !== undefined && JSON.stringify(s.const) !== JSON.stringify(value))
    return `"${path}" must be ${JSON.stringify(s.const)}`;
  if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value)))
    return `"${path}" must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}`;
  if (s.type !== undefined && !hasType(value, s.type))
    return `"${path}" must be ${Array.isArray(s.type) ? s.type.join(" or ") : String(s.type)}, got ${typeOf(value)}`;
  if (Array.isArray(s.allOf))
    for (const sub of s.allOf) {
      const problem = schemaProblem(sub, value, path);
      if (problem) return problem;
    }
  if (Array.isArray(s.anyOf) && !s.anyOf.some((sub) => !schemaProblem(sub, value, path)))
    return `"${path}" matches none of the allowed schemas (anyOf)`;
  if (Array.isArray(s.oneOf) && s.oneOf.filter((sub) => !schemaProblem(sub, value, path)).length !== 1)
    return `"${path}" must match exactly one of the allowed schemas (oneOf)`;
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) return `"${path}" must be ≥ ${s.minimum}`;
    if (typeof s.maximum === "number" && value > s.maximum) return `"${path}" must be ≤ ${s.maximum}`;
  }
  if (typeof value === "string") {
    const length = [...value].length;
    if (typeof s.minLength === "number" && length < s.minLength)
      return `"${path}" must have at least ${s.minLength} characters`;
    if (typeof s.maxLength === "number" && length > s.maxLength)
      return `"${path}" must have at most ${s.maxLength} characters`;
    if (typeof s.pattern === "string") {
      let re: RegExp | undefined;
      try {
        re = new RegExp(s.pattern, "u");
      } catch {
        re = undefined;
      }
      if (re && !re.test(value)) return `"${path}" must match /${s.pattern}/`;
    }
  }
  if (Array.isArray(value)) {
    if (typeof s.minItems === "number" && value.length < s.minItems)
      return `"${path}" must have at least ${s.minItems} items`;
    if (typeof s.maxItems === "number" && value.length > s.maxItems)
      return `"${path}" must have at most ${s.maxItems} items`;
    if (s.items !== undefined && !Array.isArray(s.items))
      for (let i = 0; i < value.length; i++) {
        const problem = schemaProblem(s.items, value[i], `${path}[${i}]`);
        if (problem) return problem;
      }
  }
  if (isObject(value)) {
    if (Array.isArray(s.required))
      for (const key of s.required)
        if (typeof key === "string" && !(key in value)) return `"${path}.${key}" is required`;
    const properties = isObject(s.properties) ? s.properties : {};
    for (const [key, v] of Object.entries(value)) {
      if (key in properties) {
        const problem = schemaProblem(properties[key], v, `${path}.${key}`);
        if (problem) return problem;
      } else if (s.additionalProperties === false) return `"${path}.${key}" is not allowed`;
      else if (isObject(s.additionalProperties)) {
        const problem = schemaProblem(s.additionalProperties, v, `${path}.${key}`);
        if (problem) return problem;
      }
    }
  }
  return undefined;
}
