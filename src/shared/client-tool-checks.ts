/**
 * Client-side tools: declared in the run's input with a schema and no worker implementation; a call waits
 * until a client submits its result. Pure and deterministic: the run's update validator checks a submitted
 * result against the tool's result schema with `schemaProblem` (a JSON Schema subset, no code generation), the
 * client and `startAgentRun` check declarations with `clientToolsProblem`.
 */
import type { ClientToolDeclaration } from "./contracts.js";
import type { ExecuteToolOutput, ToolSpec } from "./wire.js";
import { BUDGETS, jsonBytes, overBudget } from "./payload-limits.js";
import { isObject } from "./plain-object.js";
import { linearPattern, type LinearPattern } from "./run-schema-checks.js";

const NAME = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_CLIENT_TOOLS = 64;

/**
 * Why `value` is not a list of client tool declarations (naming the field), or undefined. `checkTimeout`: the
 * run input's duration check (run-input.ts passes its own, which this file does not import).
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
 * Most work one result check may do (schema nodes visited, enum entries compared, characters matched times a
 * pattern's program size): it runs in the update validator, on the workflow thread, and must end in bounded
 * time whatever the run declared and the submitter sent. ~0.3 s on a slow core at worst; a check past it refuses
 * the result (its submitter may send a smaller one), and the run goes on waiting.
 */
export const MAX_CHECK_WORK = 4_000_000;

class CheckWork {
  private spent = 0;
  private readonly patterns = new Map<string, LinearPattern | undefined>();
  /** Counts `units`; false once the check has spent more than MAX_CHECK_WORK. */
  spend(units: number): boolean {
    this.spent += units;
    return this.spent <= MAX_CHECK_WORK;
  }
  pattern(source: string): LinearPattern | undefined {
    if (!this.patterns.has(source)) {
      const compiled = linearPattern(source);
      // A pattern RE2 cannot run was refused at start; a run recorded before that check ignores it, as it did.
      this.patterns.set(source, "problem" in compiled ? undefined : compiled);
    }
    return this.patterns.get(source);
  }
}

const TOO_COSTLY = "is too costly to check against the tool's result schema; send a smaller result";

/**
 * Why `value` does not satisfy the JSON schema `schema` (the first problem, naming its path under `path`), or
 * undefined. The keywords listed on `ClientToolDeclaration.result` are checked; others are ignored. Bounded:
 * past MAX_CHECK_WORK the value is refused as too costly to check.
 */
export function schemaProblem(schema: unknown, value: unknown, path = "value"): string | undefined {
  const work = new CheckWork();
  const problem = problemWithin(schema, value, path, work);
  return problem === TOO_COSTLY ? `"${path}" ${TOO_COSTLY}` : problem;
}

function problemWithin(schema: unknown, value: unknown, path: string, work: CheckWork): string | undefined {
  if (!work.spend(1)) return TOO_COSTLY;
  if (schema === true || schema === undefined) return undefined;
  if (schema === false) return `"${path}" is not allowed`;
  if (!isObject(schema)) return undefined;
  const s = schema;
  if (s.const !== undefined || Array.isArray(s.enum)) {
    const json = JSON.stringify(value);
    if (!work.spend(json.length / 64 + (Array.isArray(s.enum) ? s.enum.length : 1))) return TOO_COSTLY;
    if (s.const !== undefined && JSON.stringify(s.const) !== json)
      return `"${path}" must be ${JSON.stringify(s.const)}`;
    if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === json))
      return `"${path}" must be one of ${s.enum
        .slice(0, 10)
        .map((e) => JSON.stringify(e))
        .join(", ")}${s.enum.length > 10 ? `, … (${s.enum.length} values)` : ""}`;
  }
  if (s.type !== undefined && !hasType(value, s.type))
    return `"${path}" must be ${Array.isArray(s.type) ? s.type.join(" or ") : String(s.type)}, got ${typeOf(value)}`;
  if (Array.isArray(s.allOf))
    for (const sub of s.allOf) {
      const problem = problemWithin(sub, value, path, work);
      if (problem) return problem;
    }
  if (Array.isArray(s.anyOf)) {
    const problems = s.anyOf.map((sub) => problemWithin(sub, value, path, work));
    if (problems.includes(TOO_COSTLY)) return TOO_COSTLY;
    if (problems.every((p) => p !== undefined)) return `"${path}" matches none of the allowed schemas (anyOf)`;
  }
  if (Array.isArray(s.oneOf)) {
    const problems = s.oneOf.map((sub) => problemWithin(sub, value, path, work));
    if (problems.includes(TOO_COSTLY)) return TOO_COSTLY;
    if (problems.filter((p) => p === undefined).length !== 1)
      return `"${path}" must match exactly one of the allowed schemas (oneOf)`;
  }
  if (typeof value === "number") {
    if (typeof s.minimum === "number" && value < s.minimum) return `"${path}" must be ≥ ${s.minimum}`;
    if (typeof s.maximum === "number" && value > s.maximum) return `"${path}" must be ≤ ${s.maximum}`;
  }
  if (typeof value === "string") {
    if (typeof s.minLength === "number" || typeof s.maxLength === "number") {
      if (!work.spend(value.length / 64)) return TOO_COSTLY;
      const length = [...value].length;
      if (typeof s.minLength === "number" && length < s.minLength)
        return `"${path}" must have at least ${s.minLength} characters`;
      if (typeof s.maxLength === "number" && length > s.maxLength)
        return `"${path}" must have at most ${s.maxLength} characters`;
    }
    if (typeof s.pattern === "string") {
      const re = work.pattern(s.pattern);
      if (re && !work.spend((value.length + 1) * re.programSize)) return TOO_COSTLY;
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
        const problem = problemWithin(s.items, value[i], `${path}[${i}]`, work);
        if (problem) return problem;
      }
  }
  if (isObject(value)) {
    if (Array.isArray(s.required))
      for (const key of s.required)
        if (typeof key === "string" && !Object.hasOwn(value, key)) return `"${path}.${key}" is required`;
    const properties = isObject(s.properties) ? s.properties : {};
    for (const [key, v] of Object.entries(value)) {
      if (Object.hasOwn(properties, key)) {
        const problem = problemWithin(properties[key], v, `${path}.${key}`, work);
        if (problem) return problem;
      } else if (s.additionalProperties === false) return `"${path}.${key}" is not allowed`;
      else if (isObject(s.additionalProperties)) {
        const problem = problemWithin(s.additionalProperties, v, `${path}.${key}`, work);
        if (problem) return problem;
      }
    }
  }
  return undefined;
}
