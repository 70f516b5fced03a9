/**
 * A run never chooses where the worker's credentials go (DESIGN §7, issue #36).
 * Written from the attacker's side: whoever can start a run passes a catalogue
 * model object whose base URL points at a listener of theirs, and the listener
 * must receive nothing at all — no request, hence no key. The operator's own
 * models, string refs and allowed base URLs keep working; metrics labels stay
 * bounded whatever model id a run makes up.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { MockActivityEnvironment } from "@temporalio/testing";
import { ApplicationFailure } from "@temporalio/common";
import {
  fauxAssistantMessage,
  getModel,
  registerFauxProvider,
  type Api,
  type AssistantMessage,
  type Model,
} from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { createActivities } from "../../src/worker/activities/index.js";
import { createAgentMetrics } from "../../src/worker/telemetry/metrics.js";
import type { AgentRunResult } from "../../src/shared/contracts.js";
import type { AgentRunWorkflowInput, StreamAssistantInput } from "../../src/shared/wire.js";
import { fauxModel, openTestEnv, outcome, testWorker, textOf, uniqueId, type TestEnv } from "../support/helpers.js";
import { ProviderServer } from "../support/provider-server.js";
import { killAllWorkers, startSourceWorker } from "../support/service/processes.js";

const ANTHROPIC_KEY = "sk-ant-api03-ATTACKER-WANTS-THIS-0123456789";
const OPENAI_KEY = "sk-proj-ATTACKER-WANTS-THIS-0123456789";
const keys: Record<string, string> = { anthropic: ANTHROPIC_KEY, openai: OPENAI_KEY };

let env: TestEnv;
/** The attacker's endpoint: records every request it gets (and speaks real wire formats, for the allowed case). */
let listener: ProviderServer;
let url: string;

beforeAll(async () => {
  env = await openTestEnv();
  listener = await new ProviderServer().start();
  url = `http://127.0.0.1:${listener.port}`;
});
afterAll(async () => {
  killAllWorkers();
  await listener?.stop();
  await env?.close();
});

const anthropic = () => getModel("anthropic", "claude-sonnet-4-5") as Model<Api>;
const openai = () => getModel("openai", "gpt-4o-mini") as Model<Api>;

/** A worker holding real-looking provider keys, recording which providers it was asked for. */
async function keyedWorker(extra: Parameters<typeof testWorker>[2] = {}) {
  const asked: string[] = [];
  const made = await testWorker(env, [], {
    getApiKey: (provider) => (asked.push(provider), keys[provider] ?? "sk-other"),
    ...extra,
  });
  return { ...made, asked };
}

describe("a run's model object pointed at the attacker's listener", () => {
  it.each([
    ["anthropic (x-api-key)", anthropic, "/v1"],
    ["openai (Authorization: Bearer)", openai, "/v1"],
  ])("%s: refused at setup naming model.baseUrl; the listener receives nothing", async (_name, catalogue, path) => {
    listener.script([]);
    const { worker, taskQueue, asked } = await keyedWorker();
    const evil = { ...catalogue(), baseUrl: `${url}${path}` };
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("exfiltrate"),
      model: evil,
      prompt: "Summarise our confidential roadmap.",
      modelActivity: { retry: { maximumAttempts: 1 } },
    });
    const failure = await worker.runUntil(outcome(handle.result()));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({ type: "InvalidRunInput", nonRetryable: true });
    const message = (failure as ApplicationFailure).message;
    expect(message).toMatch(/^Invalid run input: "model\.baseUrl": /);
    expect(message).toContain(`"${evil.provider}/${evil.id}" is served at ${catalogue().baseUrl}`);
    expect(listener.requests).toHaveLength(0);
    expect(asked).toEqual([]);
  });

  it("a forged continue-as-new carry skips setup, yet the model activity sends nothing and asks for no key", async () => {
    listener.script([]);
    const { worker, taskQueue, asked } = await keyedWorker();
    const prompt = { role: "user" as const, content: "Summarise our confidential roadmap.", timestamp: 0 };
    const zero = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
    // Any Temporal client may start agentRun with a `continued` of its own: the setup activity never sees this model.
    const input: AgentRunWorkflowInput = {
      model: "anthropic/claude-sonnet-4-5",
      prompt: "ignored: the carry holds the context",
      modelActivity: { retry: { maximumAttempts: 1 } },
      continued: {
        setup: { model: { ...anthropic(), baseUrl: url }, tools: [] },
        context: [prompt],
        earlierMessages: 0,
        newMessages: [prompt],
        newMessagesOmitted: 0,
        usage: { ...zero, totalTokens: 0, cost: zero },
        turn: 0,
        steering: [],
        followUps: [],
        loop: { start: 0, turns: 0, moreToolCalls: true, pending: [], lastStop: "toolUse" },
      },
    };
    const handle = await env.client.workflow.start("agentRun", {
      taskQueue,
      workflowId: uniqueId("forged-carry"),
      args: [input],
    });
    // The run ends on the refused call (an "error" run fails its workflow, the message says why).
    const ended = await worker.runUntil(outcome(handle.result() as Promise<AgentRunResult>));
    const message = ended instanceof ApplicationFailure ? ended.message : (ended.errorMessage ?? "");
    expect(ended instanceof ApplicationFailure || ended.stopReason === "error").toBe(true);
    expect(message).toContain("Cannot call model anthropic/claude-sonnet-4-5");
    expect(message).toContain("(the request was not sent)");
    expect(listener.requests).toHaveLength(0);
    expect(asked).toEqual([]);
  });

  it("is served, with the worker's key, once the operator allows that base URL", async () => {
    listener.script([{ text: "Served by the allowed endpoint.", usage: { input: 9, output: 5 } }]);
    const { worker, taskQueue, asked } = await keyedWorker({ allowedModelBaseUrls: [`${url}/`] });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("allowed"),
      model: { ...anthropic(), baseUrl: url },
      prompt: "Hello",
      modelActivity: { retry: { maximumAttempts: 1 } },
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe("Served by the allowed endpoint.");
    expect(listener.requests).toHaveLength(1);
    expect(listener.requests[0].headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(asked).toEqual(["anthropic"]);
  });
});

describe("the worker process", () => {
  it("serves a model object at a base URL listed in JAI_ALLOWED_MODEL_BASE_URLS, with the key of its environment", async () => {
    listener.script([{ text: "Self-hosted hello.", usage: { input: 4, output: 3 } }]);
    const taskQueue = uniqueId("allowed-env");
    const worker = await startSourceWorker(["--task-queue", taskQueue], {
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      JAI_ALLOWED_MODEL_BASE_URLS: `http://127.0.0.1:9/v1, ${url}/`,
    });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("allowed-env"),
      model: { ...anthropic(), baseUrl: url },
      prompt: "Hello",
      modelActivity: { retry: { maximumAttempts: 1 } },
    });
    const result = await handle.result();
    expect(textOf(result.messages.at(-1))).toBe("Self-hosted hello.");
    expect(listener.requests.map((r) => r.headers["x-api-key"])).toEqual([ANTHROPIC_KEY]);
    expect(await worker.stop()).toBe(0);
  }, 90000);
});

describe("the worker's own models", () => {
  it("serves a string ref and the identical object at the model's base URL with its key; other headers are refused", async () => {
    const own = listener.anthropicModel({ id: uniqueId("claude-own") });
    listener.script([
      { text: "By reference.", usage: { input: 3, output: 2 } },
      { text: "By object.", usage: { input: 3, output: 2 } },
    ]);
    const { worker, taskQueue } = await keyedWorker({ models: [own] });
    const start = (model: string | Model<Api>) =>
      startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("own"),
        model,
        prompt: "Hello",
        modelActivity: { retry: { maximumAttempts: 1 } },
      });
    await worker.runUntil(async () => {
      const byRef = await (await start(`anthropic/${own.id}`)).result();
      expect(textOf(byRef.messages.at(-1))).toBe("By reference.");
      const byObject = await (await start({ ...own })).result();
      expect(textOf(byObject.messages.at(-1))).toBe("By object.");
      const tampered = await outcome((await start({ ...own, headers: { "x-forwarded-host": "evil.test" } })).result());
      expect(tampered).toMatchObject({ type: "InvalidRunInput", nonRetryable: true });
      expect((tampered as ApplicationFailure).message).toMatch(/^Invalid run input: "model\.headers": /);
    });
    expect(listener.requests.map((r) => r.headers["x-api-key"])).toEqual([ANTHROPIC_KEY, ANTHROPIC_KEY]);
  });
});

describe("the setup and model activities on their own", () => {
  const setupWith = (options: Partial<Parameters<typeof createActivities>[0]> = {}) =>
    createActivities({ tools: [], ...options }).resolveRunSetup;

  it("names the field at fault and accepts only what the worker serves", async () => {
    const resolve = setupWith();
    const mock = new MockActivityEnvironment();
    const refused = (model: Model<Api>) =>
      mock.run(resolve, { model }).then(
        () => "served",
        (err: Error) => err,
      );
    await expect(mock.run(resolve, { model: "anthropic/claude-sonnet-4-5" })).resolves.toBeDefined();
    await expect(mock.run(resolve, { model: anthropic() })).resolves.toMatchObject({ model: anthropic() });
    expect(await refused({ ...anthropic(), baseUrl: `${url}/v1` })).toMatchObject({
      type: "InvalidRunInput",
      message: expect.stringMatching(/^Invalid run input: "model\.baseUrl"/),
    });
    expect(await refused({ ...anthropic(), api: "openai-completions" })).toMatchObject({
      message: expect.stringMatching(/^Invalid run input: "model\.api"/),
    });
    expect(await refused({ ...anthropic(), id: "made-up", baseUrl: url })).toMatchObject({
      message: expect.stringMatching(
        /^Invalid run input: "model": "anthropic\/made-up" .* is not a model this worker serves/,
      ),
    });
    // The same host with credentials in the URL is not the allowed URL.
    const allowed = setupWith({ allowedModelBaseUrls: [url] });
    await expect(mock.run(allowed, { model: { ...anthropic(), baseUrl: `${url}/` } })).resolves.toBeDefined();
    await expect(
      mock.run(allowed, { model: { ...anthropic(), baseUrl: url.replace("//", "//user:pw@") } }),
    ).rejects.toMatchObject({ type: "InvalidRunInput" });
    expect(() => createActivities({ tools: [], allowedModelBaseUrls: ["file:///etc"] })).toThrow(
      /allowedModelBaseUrls: "file:\/\/\/etc" is not an http\(s\) base URL/,
    );
  });

  it("serves a model of an API the worker's code registered, without the worker's key unless it is one of its models", async () => {
    const faux = fauxModel([
      (_context, options) => fauxAssistantMessage(`key=${options?.apiKey}`),
      (_context, options) => fauxAssistantMessage(`key=${options?.apiKey}`),
    ]);
    const input = (model: Model<Api>): StreamAssistantInput => ({
      model,
      context: { epoch: 0, base: 0, append: [{ role: "user", content: "hi", timestamp: 1 }] },
      tools: [],
      turn: 1,
    });
    const asked: string[] = [];
    const getApiKey = (provider: string) => (asked.push(provider), "sk-from-worker");
    const stranger = createActivities({ tools: [], getApiKey }).streamAssistantMessage;
    const made: AssistantMessage = await new MockActivityEnvironment().run(
      stranger,
      input({ ...faux.getModel(), provider: "anthropic" }),
    );
    expect(textOf(made)).toBe("key=undefined");
    expect(asked).toEqual([]);
    const own = createActivities({ tools: [], getApiKey, models: [faux.getModel()] }).streamAssistantMessage;
    const mine: AssistantMessage = await new MockActivityEnvironment().run(own, input(faux.getModel()));
    expect(textOf(mine)).toBe("key=sk-from-worker");
    expect(asked).toEqual([faux.getModel().provider]);
  });
});

describe("metrics", () => {
  it("label a model id the worker does not know as 'other', its own models by name", async () => {
    const metrics = createAgentMetrics();
    const known = registerFauxProvider({ models: [{ id: uniqueId("known") }] });
    const unknown = registerFauxProvider({ models: [{ id: uniqueId("made-up") }] });
    known.setResponses([fauxAssistantMessage("one")]);
    unknown.setResponses([fauxAssistantMessage("two")]);
    const { worker, taskQueue } = await testWorker(env, [], { metrics, models: [known.getModel()] });
    await worker.runUntil(async () => {
      for (const model of [known.getModel(), unknown.getModel()]) {
        const handle = await startAgentRun(env.client, {
          taskQueue,
          workflowId: uniqueId("label"),
          model,
          prompt: "hi",
        });
        expect((await handle.result()).stopReason).toBe("stop");
      }
    });
    const text = await metrics.registry.metrics();
    const knownLabel = `model="faux/${known.getModel().id}"`;
    for (const name of ["jai_agent_runs_started_total", "jai_agent_turns_total"]) {
      expect(text).toContain(`${name}{${knownLabel}} 1`);
      expect(text).toContain(`${name}{model="other"} 1`);
    }
    expect(text).toContain(`jai_agent_runs_ended_total{model="other",stop_reason="stop"} 1`);
    expect(text).not.toContain(unknown.getModel().id);
  });
});
