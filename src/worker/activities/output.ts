/**
 * The `checkOutput` activity (local): validates one candidate final answer of a run with a typed `output`
 * against its schema with AJV (coercing, as tool arguments are), in the schema thread (schema-thread.ts: its own
 * AJV instance per schema, RE2 patterns, a hard deadline). Deterministic for a given input; the verdict is
 * recorded as a marker.
 */
import type { CheckOutputInput, CheckOutputVerdict } from "../../shared/wire.js";
import { OUTPUT_TOOL, outputParameters } from "../../shared/output-schema.js";
import { judgeAgainstSchema } from "./schema-thread.js";

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
  const verdict = await judgeAgainstSchema(parameters, args);
  if (verdict.ok) return { ok: true, output: wrapped ? (verdict.value as { value: unknown }).value : verdict.value };
  if ("errors" in verdict) {
    const errors = verdict.errors.map((e) => `  - ${e}`).join("\n") || "Unknown validation error";
    return {
      ok: false,
      error: `Validation failed for tool "${OUTPUT_TOOL}":\n${errors}\n\nReceived arguments:\n${JSON.stringify(args, null, 2)}`,
    };
  }
  // A check stopped at its deadline: the answer is not accepted, and the model may give a simpler one.
  if ("stopped" in verdict)
    return {
      ok: false,
      error: `checking the answer against the run's "output" schema was stopped: ${verdict.stopped}; give a smaller answer`,
    };
  // AJV could not compile the schema: no answer can pass.
  return { ok: false, error: `the run's "output" schema is unusable: ${verdict.unusable}`, fatal: true };
}
