/**
 * Bench-only workflows (never shipped): the naive loop every other durable
 * agent integration uses (the whole transcript in every model call's input),
 * and a bare workflow of no-op activities (the Temporal floor).
 */
import { proxyActivities } from "@temporalio/workflow";
import type { AssistantMessage, Tool, ToolCall } from "@jai/ai";
import type { AgentMessage } from "../src/shared/contracts.js";
import type { ExecuteToolInput, ExecuteToolOutput } from "../src/shared/wire.js";

export interface BenchActivities {
  naiveModel(input: { modelRef: string; messages: AgentMessage[]; tools: Tool[] }): Promise<AssistantMessage>;
  executeTool(input: ExecuteToolInput): Promise<ExecuteToolOutput>;
  noop(): Promise<void>;
}

const { naiveModel, executeTool, noop } = proxyActivities<BenchActivities>({ startToCloseTimeout: "5m" });

export async function naiveAgentRun(input: {
  modelRef: string;
  prompt: string;
  tools: Tool[];
  maxTurns: number;
}): Promise<number> {
  const messages: AgentMessage[] = [{ role: "user", content: input.prompt, timestamp: Date.now() }];
  for (let turn = 1; turn <= input.maxTurns; turn++) {
    const reply = await naiveModel({ modelRef: input.modelRef, messages, tools: input.tools });
    messages.push(reply);
    const calls = reply.content.filter((c): c is ToolCall => c.type === "toolCall");
    if (calls.length === 0) return turn;
    const outputs = await Promise.all(
      calls.map((c) => executeTool({ toolCallId: c.id, toolName: c.name, args: c.arguments })),
    );
    outputs.forEach((o, i) =>
      messages.push({
        role: "toolResult",
        toolCallId: calls[i].id,
        toolName: calls[i].name,
        content: o.result.content,
        isError: o.isError,
        timestamp: Date.now(),
      }),
    );
  }
  return input.maxTurns;
}

/** `turns` rounds of `perTurn` no-op activities one after the other (a model call, then a tool): what Temporal itself costs. */
export async function bareTurns(turns: number, perTurn: number): Promise<number> {
  for (let t = 0; t < turns; t++) for (let a = 0; a < perTurn; a++) await noop();
  return turns;
}
