/**
 * The `checkOutput` activity (local): validates one candidate final answer of a run with a typed `output`
 * against its schema with `@jai/ai`'s AJV (coercing, as tool arguments are). Deterministic for a given
 * input; the verdict is recorded as a marker.
 */
import { validateToolArguments } from "@jai/ai";
import type { TSchema } from "@sinclair/typebox";
import type { CheckOutputInput, CheckOutputVerdict } from "../workflows/wire.js";
import { OUTPUT_TOOL, outputParameters } from "../workflows/output-schema.js";

/** Schemas compiled lately, by their JSON: AJV caches a compiled schema by object (and refuses a second `$id`). */
const schemas = new Map<string, TSchema>();
const MAX_SCHEMAS = 100;

function sameSchema(parameters: TSchema): TSchema {
  const key = JSON.stringify(parameters);
  const known = schemas.get(key);
  if (known) return known;
  if (schemas.size >= MAX_SCHEMAS) schemas.delete(schemas.keys().next().value!);
  schemas.set(key, parameters);
  return parameters;
}

/** An answer's text as JSON: all of it, or the one fenced block it is (```json … ```). */
function jsonOf(text: string): { value: unknown } | { why: string } {
  const trimmed = text.trim();
  const fenced = /^```[a-z]*\s*\n([\s\S]*?)\n?```$/i.exec(trimmed);
  try {
    return { value: JSON.parse(fenced ? fenced[1] : trimmed) };
  } catch (err) {
    return { why: trimmed === "" ? "it is empty" : `it is not JSON: ${(err as Error).message}` };
  }
}

export async function checkOutput({ schema, candidate }: CheckOutputInput): Promise<CheckOutputVerdict> {
  const { parameters, wrapped } = outputParameters(schema);
  let args: unknown;
  if ("text" in candidate) {
    const parsed = jsonOf(candidate.text);
    if ("why" in parsed) return { ok: false, error: `you answered without calling ${OUTPUT_TOOL}, and ${parsed.why}` };
    args = wrapped ? { value: parsed.value } : parsed.value;
  } else args = candidate.args;
  try {
    const valid = validateToolArguments(
      { name: OUTPUT_TOOL, description: "", parameters: sameSchema(parameters) },
      { type: "toolCall", id: "output", name: OUTPUT_TOOL, arguments: args as Record<string, unknown> },
    ) as Record<string, unknown>;
    return { ok: true, output: wrapped ? valid.value : valid };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (message.startsWith("Validation failed")) return { ok: false, error: message };
    // AJV could not compile the schema: no answer can pass.
    return { ok: false, error: `the run's "output" schema is unusable: ${message}`, fatal: true };
  }
}
