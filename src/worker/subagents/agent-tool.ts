/** `agentTool()`: another agent as a tool. Each call runs as a child workflow of the calling run. */
import { Type } from "@sinclair/typebox";
import type { AgentTool, SubAgentSpec } from "../../shared/contracts.js";
import { validateRunInput } from "../../shared/run-input.js";

export interface AgentToolConfig extends SubAgentSpec {
  /** Tool name the parent's model calls. */
  name: string;
  /** What the sub-agent is good at, for the parent's model. */
  description: string;
}

/**
 * A tool whose call starts a child `agentRun` with the model's `prompt`: the
 * child's final answer is the result, its usage adds to the parent's, and
 * cancelling the parent cancels it (and its own children). Children nest at
 * most `maxDepth` deep (default 3): a call past it is an error result for the
 * model. With `output` (a TypeBox schema) the child's answer is typed: the
 * result is its validated output as JSON. Register it with the worker like any tool.
 */
export function agentTool(config: AgentToolConfig): AgentTool {
  const { name, description, ...subAgent } = config;
  const depth = subAgent.maxDepth;
  if (depth !== undefined && (typeof depth !== "number" || !Number.isInteger(depth) || depth < 0))
    throw new TypeError(`agentTool ${name}: "maxDepth" must be a non-negative integer, got ${JSON.stringify(depth)}`);
  // A typed child: checked here as the run input's `output` fields would be, so a bad one fails at worker start.
  const typedProblem = validateRunInput(
    { model: "check/output", prompt: "check", output: subAgent.output, outputRetries: subAgent.outputRetries },
    { unknownFields: false },
  );
  if (typedProblem) throw new TypeError(`agentTool ${name}: ${typedProblem}`);
  return {
    name,
    description,
    label: name,
    parameters: Type.Object({
      prompt: Type.String({ description: "The task for the sub-agent, with everything it needs to know" }),
    }),
    subAgent,
    async execute() {
      // The workflow starts a child run for this tool; reaching here means a call bypassed it.
      throw new Error(`${name} is a sub-agent: its calls run as child workflows, not in the tool activity`);
    },
  };
}
