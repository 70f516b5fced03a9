/**
 * Named agents from the worker's config module (issue 40): a worker process started with
 * `--config test/fixtures/agents-config.ts` serves them; `jai-agent start --agent <name>` (a child process that
 * loads the same module) starts one by name and the run gets that agent's model and system prompt; an unknown
 * name exits 2 listing the known ones; and the worker process's run API (`--http-port`, the token it prints)
 * lists the agents (`GET /agents`) and starts one (`POST /runs { agent, prompt }`).
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { getAgentRun } from "../../src/client/client.js";
import type { AgentMessage } from "../../src/shared/contracts.js";
import { killAllWorkers, startSourceWorker, type WorkerProcess } from "../support/service/processes.js";
import { openTestEnv, textOf, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { jaiAgent } from "../support/cli.js";

const CONFIG = "test/fixtures/agents-config.ts";

let env: TestEnv;
let worker: WorkerProcess;
let queue: string;
/** The worker's run API and the token it printed in its console URL. */
let api: { base: string; token: string };

beforeAll(async () => {
  env = await openTestEnv();
  queue = uniqueId("agents");
  worker = await startSourceWorker(["--config", CONFIG, "--task-queue", queue, "--http-port", "0"], {
    JAI_HTTP_TOKEN: undefined,
    TEMPORAL_ADDRESS: process.env.TEMPORAL_ADDRESS,
  });
  const [, base, token] =
    /runs API and console on (http:\/\/127\.0\.0\.1:\d+)\/#token=([\w-]+)/.exec(worker.output()) ?? [];
  if (!token) throw new Error(`the worker printed no console URL with a token: ${worker.output()}`);
  api = { base, token };
}, 120_000);
afterAll(async () => {
  if (worker) await within(worker.stop(), 60_000, "the worker to drain").catch(() => undefined);
  killAllWorkers();
  await env?.close();
});

/** The run's answer and the model that gave it. */
async function answerOf(workflowId: string): Promise<{ text: string; model: string }> {
  const result = await within(getAgentRun(env.client, workflowId).result(), 60_000, `run ${workflowId} to end`);
  expect(result.stopReason).toBe("stop");
  const last = [...result.messages].reverse().find((m: AgentMessage) => m.role === "assistant") as
    | (AgentMessage & { provider: string; model: string })
    | undefined;
  return { text: textOf(last), model: `${last?.provider}/${last?.model}` };
}

const call = (method: string, pathname: string, body?: unknown) =>
  fetch(`${api.base}${pathname}`, {
    method,
    headers: {
      authorization: `Bearer ${api.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

describe("named agents of a --config module", () => {
  it("jai-agent start --agent: the worker process runs it with the agent's model and system prompt; an unknown agent exits 2 listing the known ones", async () => {
    const started = await jaiAgent([
      "start",
      "--agent",
      "reviewer",
      "--config",
      CONFIG,
      "--task-queue",
      queue,
      "Review my change",
    ]);
    expect(started.stderr).toBe("");
    expect(started.code).toBe(0);
    const id = /^Started run (\S+): agent "reviewer", model agents-fixture\/model-2, task queue "(.+)"$/m.exec(
      started.stdout,
    );
    expect(id?.[2]).toBe(queue);
    const workflowId = id![1];
    expect(started.stdout).toContain(`jai-agent watch ${workflowId}`);
    expect(started.stdout).toContain(`jai-agent approve ${workflowId} <toolCallId|--all>`);
    expect(await answerOf(workflowId)).toEqual({
      text: "[agents-fixture/model-2] You review code. Be specific.",
      model: "agents-fixture/model-2",
    });

    // An override the agent allows (JAI_CONFIG finds the module too); one it does not is bad usage.
    const other = await jaiAgent(
      ["start", "--agent", "reviewer", "--model", "agents-fixture/model-1", "--task-queue", queue, "--json", "again"],
      { JAI_CONFIG: CONFIG },
    );
    expect(other.code).toBe(0);
    const { workflowId: otherId } = JSON.parse(other.stdout) as { workflowId: string };
    expect((await answerOf(otherId)).model).toBe("agents-fixture/model-1");
    const widened = await jaiAgent([
      "start",
      "--agent",
      "greeter",
      "--config",
      CONFIG,
      "--system-prompt",
      "Be rude.",
      "hi",
    ]);
    expect(widened.code).toBe(2);
    expect(widened.stderr).toContain(`agent "greeter" does not allow another system prompt`);

    const unknown = await jaiAgent(["start", "--agent", "nobody", "--config", CONFIG, "hi"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain(`no agent "nobody" (configured: greeter, reviewer)`);
    expect(unknown.stdout).toBe("");
  }, 180_000);

  it("the worker process's run API: GET /agents lists the config's agents, POST /runs { agent, prompt } starts one", async () => {
    const listed = await call("GET", "/agents");
    expect(listed.status).toBe(200);
    const { agents } = (await listed.json()) as { agents: { name: string; model: string; description: string }[] };
    expect(agents.map((a) => [a.name, a.model, a.description])).toEqual([
      ["greeter", "agents-fixture/model-1", "Greets"],
      ["reviewer", "agents-fixture/model-2", "Reviews a change"],
    ]);
    expect((await fetch(`${api.base}/agents`)).status).toBe(401); // the token is required

    const workflowId = uniqueId("greeter-run");
    const started = await call("POST", "/runs", { agent: "greeter", prompt: "Hello there", workflowId });
    expect(started.status).toBe(201);
    expect(await started.json()).toEqual({ workflowId });
    expect(await answerOf(workflowId)).toEqual({
      text: "[agents-fixture/model-1] You greet people warmly.",
      model: "agents-fixture/model-1",
    });

    const unknown = await call("POST", "/runs", { agent: "nobody", prompt: "hi" });
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { error: string }).error).toContain(
      `no agent "nobody" (configured: greeter, reviewer)`,
    );
  }, 120_000);
});
