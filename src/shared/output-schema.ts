/**
 * Typed results (run input `output`): the final tool the model gives its answer with. Pure: the workflow
 * (the tool it offers) and the worker's check (worker/activities/output.ts) share it. See docs/typed-results.md.
 */
import type { Tool } from "@jai/ai";
import type { TSchema } from "@sinclair/typebox";

/** The tool a run with a typed output offers the model for its final answer. */
export const OUTPUT_TOOL = "final_answer";
/** Invalid final answers the model may correct unless the run's `outputRetries` says otherwise. */
export const DEFAULT_OUTPUT_RETRIES = 2;

const DESCRIPTION =
  "Gives your final answer: when you are done, call this tool alone, with the answer as its arguments. " +
  "The run ends when they match the schema; if they do not, you get the error and may call it again.";

/**
 * The tool's parameters: an object schema as it is; any other schema wrapped as `{ value }`, since
 * providers take object parameters only (`wrapped`: the output is then the `value` argument).
 */
export function outputParameters(schema: TSchema): { parameters: TSchema; wrapped: boolean } {
  if (schema.type === "object") return { parameters: schema, wrapped: false };
  return {
    parameters: { type: "object", properties: { value: schema }, required: ["value"] } as unknown as TSchema,
    wrapped: true,
  };
}

/** The final tool as the model is offered it. */
export function outputTool(schema: TSchema): Tool {
  return { name: OUTPUT_TOOL, description: DESCRIPTION, parameters: outputParameters(schema).parameters };
}

/** What the model is told when it answered without the final tool and its text was not a valid answer. */
export function outputCorrection(error: string): string {
  return `Your answer was not accepted: ${error}\n\nGive your final answer by calling the ${OUTPUT_TOOL} tool, alone, with the answer as its arguments.`;
}

/** What the model is told when it called the final tool with other calls, or more than once, in one turn. */
export const NOT_ALONE = `${OUTPUT_TOOL} must be called once and alone: the other tool calls of this turn ran; call it again by itself when you are done.`;

/** The final tool's result when the answer passed. */
export const ANSWER_ACCEPTED = "Answer accepted.";
