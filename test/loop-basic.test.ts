import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../src/client.js";
import type { AgentTool } from "../src/types.js";
import { eventTrace, fauxModel, openTestEnv, testWorker, uniqueId, type TestEnv } from "./helpers.js";

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

const echo: AgentTool = {
  name: "echo",
  description: "Echo the text back",
  parameters: Type.Object({ text: Type.String() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `echo: ${args.text}` }], details: { length: args.text.length } };
  },
};

describe("agent loop events", () => {
  it("emits the exact event order of a text-only run", async () => {
    const faux = fauxModel([fauxAssistantMessage("Hello there")]);
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, { taskQueue, workflowId: uniqueId("wf"), model: faux.getModel(), prompt: "Hi" });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(result.turns).toBe(1);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const trace = eventTrace(events).filter((t, i, all) => !(t === "message_update" && all[i - 1] === "message_update"));
    expect(trace).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
  });

  it("runs a tool and feeds its result back", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("echo", { text: "ping" }, { id: "call-1" })], { stopReason: "toolUse" }),
      (context) => fauxAssistantMessage(`saw ${JSON.stringify(context.messages.at(-1))}`),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [echo]);
    const handle = await startAgentRun(env.client, { taskQueue, workflowId: uniqueId("wf"), model: faux.getModel(), prompt: "Echo ping" });
    const result = await worker.runUntil(handle.result());
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(eventTrace(events)).toContain("tool_execution_start");
    const last = result.messages[3];
    expect(last.role === "assistant" && last.content[0].type === "text" ? last.content[0].text : "").toContain("echo: ping");
    expect(last.role === "assistant" && last.content[0].type === "text" ? last.content[0].text : "").not.toContain("details");
  });
});
