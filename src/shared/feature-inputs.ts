/**
 * What each run feature checks of a run's input (the features themselves are workflow code:
 * workflows/features/). Pure: the client checks an input with these before starting a run, the workflow first
 * thing in the run, so both refuse the same input with the same message. One entry per feature, named as its
 * feature (a unit test holds the two lists to the same names and order).
 */
import { checkDuration } from "./activity-options.js";
import { approvalPolicyProblem, policyFloorProblem } from "./approval-rules.js";
import { clientToolsProblem } from "./client-tool-checks.js";
import { checkModel } from "./model-field.js";
import { isObject } from "./plain-object.js";
import { runSchemasProblem } from "./run-schema-checks.js";
import { budgetProblem } from "./budget-checks.js";

/** A run feature's part in checking a run's input. */
export interface FeatureInput {
  /** The feature's name. */
  readonly name: string;
  /** Run input fields a run recorded before the feature treats as unknown (when the run does not use it). */
  readonly fields: readonly string[];
  /** Checks the input's fields for the feature. */
  problem?(input: Record<string, unknown>): string | undefined;
  /** What a run recorded before the feature said about an input that uses it (asked instead of `problem`). */
  offProblem?(input: Record<string, unknown>): string | undefined;
}

/** Typed results: `output` a JSON Schema object, `outputRetries` a non-negative integer, only with `output`. */
function outputProblem(input: Record<string, unknown>): string | undefined {
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

/** In the order the workflow opens the features (workflows/features/index.ts). */
export const FEATURE_INPUTS: readonly FeatureInput[] = [
  {
    name: "clientTools",
    fields: [],
    problem: (input) =>
      input.clientTools === undefined ? undefined : clientToolsProblem(input.clientTools, checkDuration),
  },
  { name: "typedOutput", fields: ["output", "outputRetries"], problem: outputProblem },
  { name: "budget", fields: ["budget"], problem: (input) => budgetProblem(input.budget) },
  {
    name: "modelChain",
    fields: [],
    problem: (input) => (Array.isArray(input.model) ? checkModel(input.model) : undefined),
    // Runs recorded before chains refused a list.
    offProblem: (input) =>
      Array.isArray(input.model) ? `"model" must be "provider/modelId" or a Model object` : undefined,
  },
  { name: "runSchemas", fields: [], problem: runSchemasProblem },
  {
    name: "approvalPolicy",
    fields: [],
    problem: (input) =>
      (input.approvalPolicy === undefined ? undefined : approvalPolicyProblem(input.approvalPolicy)) ??
      (input.approvalPolicyFloor === undefined ? undefined : policyFloorProblem(input.approvalPolicyFloor)),
  },
];

/** The input part of the feature named `name`. */
export function featureInput(name: string): FeatureInput {
  const found = FEATURE_INPUTS.find((f) => f.name === name);
  if (!found) throw new Error(`no run feature named ${name} in FEATURE_INPUTS`);
  return found;
}
