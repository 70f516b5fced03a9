/** A named agent's budget and fallback models (src/shared/agents.ts): checked with the config, applied to every run of it. */
import { describe, expect, it } from "@jest/globals";
import { agentRunOptions, checkAgents } from "../../src/shared/agents.js";

describe("agents: budget and fallbacks", () => {
  const agents = checkAgents([
    {
      name: "triage",
      model: "anthropic/claude-test",
      fallbacks: ["openai/gpt-test"],
      budget: { maxCostUsd: 2, maxToolCalls: 20 },
      overrides: { models: ["openai/gpt-other"] },
    },
  ]);

  it("a run of the agent carries its budget and its chain; a caller's pick of model leads the chain", () => {
    expect(agentRunOptions(agents, { agent: "triage", prompt: "go" })).toMatchObject({
      model: ["anthropic/claude-test", "openai/gpt-test"],
      budget: { maxCostUsd: 2, maxToolCalls: 20 },
    });
    expect(agentRunOptions(agents, { agent: "triage", prompt: "go", model: "openai/gpt-other" }).model).toEqual([
      "openai/gpt-other",
      "openai/gpt-test",
    ]);
  });

  it("a request cannot widen the budget: it has no budget field, and unknown fields never reach the input", () => {
    const options = agentRunOptions(agents, { agent: "triage", prompt: "go", budget: { maxCostUsd: 1e9 } } as never);
    expect(options.budget).toEqual({ maxCostUsd: 2, maxToolCalls: 20 });
  });

  it("a bad budget or fallback list stops the config, naming the agent", () => {
    expect(() => checkAgents([{ name: "a", model: "x/y", budget: { maxTokens: -1 } }])).toThrow(
      /agents\[0\]: "budget.maxTokens" must be a positive integer/,
    );
    expect(() => checkAgents([{ name: "a", model: "x/y", fallbacks: ["nope"] }])).toThrow(
      /agents\[0\]\.fallbacks must be an array/,
    );
  });
});
