/**
 * Typed results (`output`: a TypeBox schema): the final answer is validated in the worker, an invalid one goes
 * back to the model for another turn up to `outputRetries`, and `result().output` is typed. Also sub-agents,
 * continue-as-new, sessions, replay, and both wire-format provider servers. Real dev server.
 */
import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Type } from "@sinclair/typebox";
import { fauxAssistantMessage, fauxToolCall, type Context, type Tool } from "@jai/ai";
import { InvalidRunInputError, startAgentRun } from "../../src/client/client.js";
import { agentTool } from "../../src/worker/subagents/agent-tool.js";
import { replayHistory } from "../../src/worker/replay.js";
import type { AgentEvent, AgentRunResult, AgentTool } from "../../src/shared/contracts.js";
import {
  fauxModel,
  openTestEnv,
  outcome,
  rejection,
  testWorker,
  textOf,
  toolEventProblems,
  uniqueId,
  within,
  type TestEnv,
} from "../support/helpers.js";
import { ProviderServer } from "../support/provider-server.js";
import { nodeEntry } from "../support/entry.js";

let env: TestEnv;
let server: ProviderServer;
beforeAll(async () => {
  env = await openTestEnv();
  server = await new ProviderServer().start();
});
afterAll(async () => {
  await server?.stop();
  await env?.close();
});

const Weather = Type.Object({ city: Type.String(), tempC: Type.Number() });
const answer = (args: Record<string, unknown>, id = "fa") =>
  fauxAssistantMessage([fauxToolCall("final_answer", args, { id })], { stopReason: "toolUse" });
/** The last message the model was sent (what it reacts to). */
const lastSent = (context: Context) => context.messages[context.messages.length - 1];
const plain = (value: unknown) => JSON.parse(JSON.stringify(value)) as unknown;

/** `npm run watch -- <id>` in its own process, on a finished run; resolves with what it printed. */
function watch(workflowId: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeEntry("src/cli/watch.ts"), workflowId], {
      env: { ...process.env, JAI_EVENTS_URL: "", JAI_EVENTS_TRUSTED_HOSTS: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    proc.stdout.on("data", (c: Buffer) => (out += c.toString()));
    proc.stderr.on("data", (c: Buffer) => (out += c.toString()));
    proc.on("error", reject);
    proc.on("exit", (code) => (code === 0 ? resolve(out) : reject(new Error(`watch exited ${code}: ${out}`))));
  });
}

describe("typed results", () => {
  it("valid on the first try: result().output is the final answer (coerced, typed), the model was offered the schema, and the run replays", async () => {
    let offered: Tool[] | undefined;
    const model = fauxModel([
      (context: Context) => {
        offered = context.tools;
        return answer({ city: "Lisbon", tempC: "21" });
      },
    ]);
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-first"),
      model: model.getModel(),
      prompt: "Weather in Lisbon?",
      output: Weather,
    });
    const result = await worker.runUntil(handle.result());
    // Typed through the generic: a compile error if output were unknown.
    const temp: number | undefined = result.output?.tempC;
    expect(temp).toBe(21);
    expect(result.stopReason).toBe("stop");
    expect(result.turns).toBe(1);
    expect(result.output).toEqual({ city: "Lisbon", tempC: 21 });
    const final = result.messages.at(-1)!;
    expect(final.role === "toolResult" && [final.toolName, final.isError, textOf(final)]).toEqual([
      "final_answer",
      false,
      "Answer accepted.",
    ]);
    expect(offered?.map((t) => t.name)).toEqual(["final_answer"]);
    expect(plain(offered?.[0].parameters)).toEqual(plain(Weather));
    expect(toolEventProblems(events)).toEqual([]);
    // The check is one local-activity marker; the run replays as recorded.
    const history = await handle.workflow.fetchHistory();
    const markers = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes);
    expect(markers.map((e) => e.markerRecordedEventAttributes?.markerName)).toEqual(
      expect.arrayContaining(["core_patch", "core_local_activity"]),
    );
    const replayed = await replayHistory(history, handle.workflowId, env.bundle);
    expect(replayed.error).toBeUndefined();
    // What the console and any follower read: the answer as final_answer's call, with its arguments and result.
    const followed: AgentEvent[] = [];
    for await (const { event } of handle.events()) followed.push(event);
    expect(followed.filter((e) => e.type.startsWith("tool_execution"))).toMatchObject([
      { type: "tool_execution_start", toolName: "final_answer", args: { city: "Lisbon", tempC: "21" } },
      { type: "tool_execution_end", toolName: "final_answer", isError: false },
    ]);
    // `watch` prints the output as JSON at the end.
    const printed = await within(watch(handle.workflowId), 60_000, "watch");
    expect(printed).toContain(`output: ${JSON.stringify({ city: "Lisbon", tempC: 21 }, null, 2)}\n`);
  }, 90_000);

  it("valid after one correction: the validation error is the final_answer's result, and the next answer passes", async () => {
    let errorSeen = "";
    const model = fauxModel([
      answer({ city: "Lisbon", tempC: "warm" }, "fa-1"),
      (context: Context) => {
        errorSeen = textOf(lastSent(context));
        return answer({ city: "Lisbon", tempC: 21 }, "fa-2");
      },
    ]);
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-corrected"),
      model: model.getModel(),
      prompt: "Weather in Lisbon?",
      output: Weather,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(result.turns).toBe(2);
    expect(result.output).toEqual({ city: "Lisbon", tempC: 21 });
    expect(errorSeen).toMatch(/Validation failed for tool "final_answer"[\s\S]*tempC: must be number/);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => m.role === "toolResult" && m.isError)).toEqual([true, false]);
    expect(toolEventProblems(events)).toEqual([]);
  });

  it("a text answer: prose gets a correction message naming final_answer, JSON text (fenced) is accepted", async () => {
    let correction = "";
    const model = fauxModel([
      fauxAssistantMessage("It is sunny and 21 degrees in Lisbon."),
      (context: Context) => {
        correction = textOf(lastSent(context));
        return fauxAssistantMessage('```json\n{ "city": "Lisbon", "tempC": 21 }\n```');
      },
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-text"),
      model: model.getModel(),
      prompt: "Weather in Lisbon?",
      output: Weather,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(result.output).toEqual({ city: "Lisbon", tempC: 21 });
    expect(correction).toMatch(/not accepted: you answered without calling final_answer, and it is not JSON/);
    expect(correction).toMatch(/calling the final_answer tool/);
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
  });

  it("failing after the bound: stopReason error naming the validation error, no output, the run failed", async () => {
    const model = fauxModel([
      answer({ city: "Lisbon" }, "fa-1"),
      answer({ city: "Lisbon", tempC: "warm" }, "fa-2"),
      answer({ city: "Lisbon", tempC: 21 }, "fa-3"),
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-bound"),
      model: model.getModel(),
      prompt: "Weather in Lisbon?",
      output: Weather,
      outputRetries: 1,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("error");
    expect(result.turns).toBe(2);
    expect(result.output).toBeUndefined();
    expect(result.errorMessage).toMatch(
      /^Typed output: no valid final answer after 2 attempts; the last: Validation failed for tool "final_answer":\n {2}- tempC: must be number/,
    );
    expect((await handle.workflow.describe()).status.name).toBe("FAILED");
  });

  it("final_answer with other tool calls: those run, the answer is refused (counted), then accepted alone", async () => {
    let ran = 0;
    const note: AgentTool = {
      name: "note",
      description: "Takes a note",
      parameters: Type.Object({}),
      async execute() {
        ran++;
        return { content: [{ type: "text", text: "noted" }] };
      },
    };
    const model = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("note", {}, { id: "n1" }),
          fauxToolCall("final_answer", { city: "Oslo", tempC: 3 }, { id: "fa-1" }),
        ],
        { stopReason: "toolUse" },
      ),
      answer({ city: "Oslo", tempC: 3 }, "fa-2"),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [note]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-mixed"),
      model: model.getModel(),
      prompt: "Weather in Oslo?",
      output: Weather,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.output).toEqual({ city: "Oslo", tempC: 3 });
    expect(ran).toBe(1);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => [m.role === "toolResult" && m.toolName, m.role === "toolResult" && m.isError])).toEqual([
      ["note", false],
      ["final_answer", true],
      ["final_answer", false],
    ]);
    expect(textOf(results[1])).toMatch(/must be called once and alone/);
    expect(toolEventProblems(events)).toEqual([]);
  });

  it("across continue-as-new: the failures so far are carried (the bound holds), and the output reaches result()", async () => {
    const List = Type.Array(Type.String());
    // Not an object schema: offered as { value }, the output is the value.
    const bounded = fauxModel([answer({ value: "a" }, "fa-1"), answer({ value: 1 }, "fa-2"), answer({ value: ["x"] })]);
    const passes = fauxModel([answer({ value: "a" }, "fa-1"), answer({ value: ["x", "y"] }, "fa-2")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const start = (model: typeof bounded, retries: number) =>
      startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("typed-can"),
        model: model.getModel(),
        prompt: "List things",
        output: List,
        outputRetries: retries,
        continueAsNew: { afterTurns: 1 },
      });
    const [a, b] = [await start(bounded, 1), await start(passes, 1)];
    const [ra, rb] = await worker.runUntil(Promise.all([a.result(), b.result()]));
    expect([ra.stopReason, ra.errorMessage?.split(";")[0]]).toEqual([
      "error",
      "Typed output: no valid final answer after 2 attempts",
    ]);
    expect(rb.stopReason).toBe("stop");
    const list: string[] | undefined = rb.output;
    expect(list).toEqual(["x", "y"]);
    // Both continued as new: the second attempt was in another run of the chain.
    for (const h of [a, b]) {
      const last = await h.workflow.fetchHistory();
      expect(last.events?.[0].workflowExecutionStartedEventAttributes?.continuedExecutionRunId).toBeTruthy();
    }
  });

  it("a session: each prompt's answer is its PromptResult.output, and the run's result has the last", async () => {
    const model = fauxModel([
      answer({ city: "Lisbon", tempC: 21 }, "fa-1"),
      answer({ city: "Oslo", tempC: 3 }, "fa-2"),
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-session"),
      model: model.getModel(),
      prompt: "Weather in Lisbon?",
      output: Weather,
      session: true,
    });
    const result = await worker.runUntil(async () => {
      const second = await handle.prompt("And Oslo?");
      expect(second.output).toEqual({ city: "Oslo", tempC: 3 });
      await handle.close();
      return handle.result();
    });
    expect(result.output).toEqual({ city: "Oslo", tempC: 3 });
  });

  it("a sub-agent's typed output reaches its parent as the tool result (JSON text and details)", async () => {
    const child = fauxModel([answer({ city: "Paris", tempC: 18 })]);
    const forecaster = agentTool({
      name: "forecaster",
      description: "Finds the weather",
      model: child.getModel(),
      output: Weather,
    });
    let seenByParent = "";
    const parent = fauxModel([
      fauxAssistantMessage([fauxToolCall("forecaster", { prompt: "Paris" }, { id: "f1" })], { stopReason: "toolUse" }),
      (context: Context) => {
        seenByParent = textOf(lastSent(context));
        return fauxAssistantMessage("Paris: 18°C");
      },
    ]);
    const { worker, taskQueue } = await testWorker(env, [forecaster]);
    const workflowId = uniqueId("typed-parent");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: parent.getModel(),
      prompt: "Weather in Paris?",
      tools: ["forecaster"],
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(JSON.parse(seenByParent)).toEqual({ city: "Paris", tempC: 18 });
    const toolResult = result.messages.find((m) => m.role === "toolResult");
    expect(toolResult?.role === "toolResult" && toolResult.details).toMatchObject({
      subAgent: { workflowId: `${workflowId}/sub-1-0`, stopReason: "stop", output: { city: "Paris", tempC: 18 } },
    });
    const childResult = (await env.client.workflow.getHandle(`${workflowId}/sub-1-0`).result()) as AgentRunResult;
    expect(childResult.output).toEqual({ city: "Paris", tempC: 18 });
  });

  it("bad input: a clear typed error before anything starts; a worker tool named final_answer fails the run", async () => {
    const base = { taskQueue: uniqueId("tq"), model: "faux/x", prompt: "hi" };
    await expect(startAgentRun(env.client, { ...base, output: "object" as never })).rejects.toThrow(
      new InvalidRunInputError('Invalid run input: "output" must be a JSON Schema object (e.g. a TypeBox schema)'),
    );
    await expect(startAgentRun(env.client, { ...base, output: Weather, outputRetries: -1 })).rejects.toThrow(
      /"outputRetries" must be a non-negative integer/,
    );
    await expect(startAgentRun(env.client, { ...base, outputRetries: 1 })).rejects.toThrow(
      /"outputRetries" needs "output"/,
    );
    expect(() => agentTool({ name: "x", description: "x", model: "faux/x", output: [] as never })).toThrow(
      /agentTool x: "output" must be a JSON Schema object/,
    );
    const clash: AgentTool = { ...agentTool({ name: "final_answer", description: "x", model: "faux/x" }) };
    const model = fauxModel([answer({ city: "Lisbon", tempC: 21 })]);
    const { worker, taskQueue } = await testWorker(env, [clash]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-clash"),
      model: model.getModel(),
      prompt: "hi",
      output: Weather,
    });
    const failed = await worker.runUntil(outcome(handle.workflow.result() as Promise<AgentRunResult>));
    expect(failed).toMatchObject({ type: "InvalidRunInput" });
    expect(await rejection(handle.result())).toMatch(/tool named final_answer, and the run has a tool of that name/);
  });
});

/**
 * The measurement behind the final tool: @jai/ai has no structured-output option for any provider, and it
 * sends tool parameters as they are to OpenAI but keeps only `properties` and `required` of the top level for
 * Anthropic (`additionalProperties: false` is dropped there). The worker's check uses the whole schema either way.
 */
const Strict = Type.Object({ city: Type.String(), tempC: Type.Number() }, { additionalProperties: false });
describe.each([
  [
    "OpenAI Chat Completions",
    (s: ProviderServer) => s.openAIModel(),
    (tool: any) => [tool.function?.name, tool.function?.parameters],
    false,
  ],
  [
    "Anthropic Messages",
    (s: ProviderServer) => s.anthropicModel(),
    (tool: any) => [tool.name, tool.input_schema],
    undefined,
  ],
])("typed results over %s's wire format", (_name, makeModel, nameAndSchema, additionalProperties) => {
  it("offers final_answer with the schema as its parameters, refuses an answer the whole schema refuses, ends typed", async () => {
    const model = makeModel(server);
    server.script([
      { toolCalls: [{ id: "call_1", name: "final_answer", args: { city: "Rome", tempC: 25, note: "sunny" } }] },
      { toolCalls: [{ id: "call_2", name: "final_answer", args: { city: "Rome", tempC: "25" } }] },
    ]);
    const { worker, taskQueue } = await testWorker(env, [], { models: [model], getApiKey: () => "sk-test" });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("typed-wire"),
      model,
      prompt: "Weather in Rome?",
      output: Strict,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(result.output).toEqual({ city: "Rome", tempC: 25 });
    expect(server.requests).toHaveLength(2);
    const tools = (server.requests[0].body.tools ?? []).map(nameAndSchema);
    expect(tools).toHaveLength(1);
    expect(tools[0][0]).toBe("final_answer");
    const { additionalProperties: _, ...rest } = plain(Strict) as Record<string, unknown>;
    expect(tools[0][1]).toMatchObject(rest);
    expect(tools[0][1].additionalProperties).toBe(additionalProperties);
    // The refusal went back over the wire as the call's error result.
    expect(JSON.stringify(server.requests[1].body)).toContain("must NOT have additional properties");
  });
});
