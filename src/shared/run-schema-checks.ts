/**
 * The JSON schemas a run brings itself (typed `output`, client tools' `parameters` and `result`): what a run may
 * declare, and the regular expressions they hold. Pure and deterministic: the workflow checks declarations at
 * start (behind RUN_SCHEMAS_PATCH), the client before starting, the worker's output check and the run's
 * client-result validator match patterns with it. See docs/security.md "Schemas a run brings".
 *
 * Why RE2 (re2js): JavaScript's RegExp backtracks, so a 10-character pattern and a 65-character answer can hold
 * a thread for minutes (`^(a|aa)+$`). RE2 matches in time linear in the input for a given program; a pattern it
 * cannot run that way (lookaround, backreferences) is refused when the run starts, with the field named.
 */
import { RE2JS } from "re2js";
import { isObject } from "./plain-object.js";

/** Keywords whose value is data, not a schema: never walked for `$ref` or `pattern`. */
const DATA_KEYWORDS = new Set(["enum", "const", "default", "examples", "description", "title", "$comment"]);
/** Keywords whose value maps names to schemas (the map itself is not a schema: a property may be named "$ref"). */
const MAP_KEYWORDS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
/** References that may reach outside the schema that holds them. */
const REF_KEYWORDS = ["$ref", "$dynamicRef", "$recursiveRef"];
/** Deepest nesting a run's schema may have (a schema is walked recursively, here and by validators). */
export const MAX_SCHEMA_DEPTH = 32;
/** Largest compiled program a pattern may have (RE2 instructions): matching costs program size × input length. */
export const MAX_PATTERN_PROGRAM = 2000;

/** A pattern compiled for linear-time matching, with its program size (the cost per input character). */
export interface LinearPattern {
  test(text: string): boolean;
  readonly programSize: number;
}

/** `pattern` compiled with RE2 semantics (unanchored, as JSON Schema's `pattern`), or why it cannot be. */
export function linearPattern(pattern: string): LinearPattern | { problem: string } {
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (err) {
    return { problem: `${(err as Error).message} (patterns use RE2 syntax: no lookaround or backreferences)` };
  }
  const programSize = re.programSize();
  if (programSize > MAX_PATTERN_PROGRAM)
    return { problem: `compiles to ${programSize} instructions; at most ${MAX_PATTERN_PROGRAM}` };
  return { test: (text) => re.matcher(text).find(), programSize };
}

/**
 * Why `schema` (a run's own JSON schema at `field`) cannot be declared, naming the field, or undefined: a
 * reference that leaves the schema (only `#…` is local), a pattern RE2 cannot run, nesting past
 * MAX_SCHEMA_DEPTH. Validators compile each run's schema on its own (no `$id` is shared between runs).
 */
export function runSchemaProblem(schema: unknown, field: string, depth = 0): string | undefined {
  if (Array.isArray(schema)) {
    for (let i = 0; i < schema.length; i++) {
      const problem = runSchemaProblem(schema[i], `${field}[${i}]`, depth + 1);
      if (problem) return problem;
    }
    return undefined;
  }
  if (!isObject(schema)) return undefined;
  if (depth > MAX_SCHEMA_DEPTH) return `"${field}" nests deeper than ${MAX_SCHEMA_DEPTH} levels`;
  for (const keyword of REF_KEYWORDS) {
    const ref = schema[keyword];
    if (ref !== undefined && (typeof ref !== "string" || !ref.startsWith("#")))
      return `"${field}.${keyword}" must be a local reference ("#…"): a run's schema cannot refer to another schema`;
  }
  if (typeof schema.pattern === "string") {
    const compiled = linearPattern(schema.pattern);
    if ("problem" in compiled) return `"${field}.pattern" cannot be used: ${compiled.problem}`;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (DATA_KEYWORDS.has(key)) continue;
    if (key === "patternProperties" && isObject(value))
      for (const pattern of Object.keys(value)) {
        const compiled = linearPattern(pattern);
        if ("problem" in compiled)
          return `"${field}.patternProperties" key /${pattern}/ cannot be used: ${compiled.problem}`;
      }
    if (MAP_KEYWORDS.has(key) && isObject(value)) {
      for (const [name, sub] of Object.entries(value)) {
        const problem = runSchemaProblem(sub, `${field}.${key}.${name}`, depth + 1);
        if (problem) return problem;
      }
      continue;
    }
    const problem = runSchemaProblem(value, `${field}.${key}`, depth + 1);
    if (problem) return problem;
  }
  return undefined;
}

/** Why one of the run's own schemas (typed `output`, client tools' `parameters` and `result`) cannot be declared. */
export function runSchemasProblem(input: Record<string, unknown>): string | undefined {
  const problem = runSchemaProblem(input.output, "output");
  if (problem || !Array.isArray(input.clientTools)) return problem;
  for (let i = 0; i < input.clientTools.length; i++) {
    const tool: unknown = input.clientTools[i];
    if (!isObject(tool)) continue;
    const own =
      runSchemaProblem(tool.parameters, `clientTools[${i}].parameters`) ??
      runSchemaProblem(tool.result, `clientTools[${i}].result`);
    if (own) return own;
  }
  return undefined;
}
