/**
 * People in the loop from a shell (issue 38, rows 3 and 5): the `jai-agent` bin lists runs and approves,
 * denies, steers, follows up, prompts and cancels them as child processes against the real dev server;
 * the plain Temporal CLI route the README documents works; and a CLI without a run's codec key names the key
 * id and JAI_CODEC_KEYS instead of the SDK's `Unknown encoding: binary/encrypted`.
 */
import { describe, expect, it } from "@jest/globals";
import { Client } from "@temporalio/client";
import { msToTs } from "@temporalio/common/lib/time.js";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import { dataConverterFromEnv } from "../../src/node/codec/config.js";
import { findTemporalCli } from "../../src/node/dev-server.js";
import { AGENT_RUN_WORKFLOW } from "../../src/shared/definitions.js";
import type { AgentRunState, AgentTool } from "../../src/shared/contracts.js";
import { startSourceWorker } from "../support/service/processes.js";
import { fauxModel, gateTool, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";
import { jaiAgent, runProgram } from "../support/cli.js";

const KEY = "K7:" + Buffer.alloc(32, 7).toString("base64");

const env = withServer();

/** Asks until `check` passes (visibility is eventually consistent), failing with its last complaint. */
async function eventually<T>(what: string, attempt: () => Promise<T>, check: (value: T) => boolean): Promise<T> {
  let last: T | undefined;
  for (let i = 0; i < 30; i++) {
    last = await attempt();
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`${what}: last ${JSON.stringify(last)}`);
}

async function untilWaiting(handle: AgentRunHandle, count = 1): Promise<AgentRunState> {
  return within(
    (async () => {
      for (;;) {
        const state = await handle.state();
        if (state.pendingApprovals.length >= count) return state;
        await new Promise((r) => setTimeout(r, 100));
      }
    })(),
    30000,
    "a tool call waiting for approval",
  );
}

function approvalTool(name = "delete_all") {
  const ran: string[] = [];
  const tool: AgentTool = {
    name,
    description: "Deletes everything",
    parameters: Type.Object({ path: Type.String() }),
    requiresApproval: true,
    async execute(_id, args: any) {
      ran.push(args.path);
      return { content: [{ type: "text", text: `deleted ${args.path}` }] };
    },
  };
  return { tool, ran };
}

const lastToolResultText = (context: Context) =>
  textOf([...context.messages].reverse().find((m) => m.role === "toolResult"));
const lastUserText = (context: Context) => textOf([...context.messages].reverse().find((m) => m.role === "user"));

describe("jai-agent: people in the loop from a shell", () => {
  it("state, runs --status waiting, approve <id> <callId>: the call runs and the run completes; refusals are one line, exit 1", async () => {
    const danger = approvalTool();
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/tmp/x" }, { id: "del-1" })], {
        stopReason: "toolUse",
      }),
      (context) => fauxAssistantMessage(`model saw: ${lastToolResultText(context)}`),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-approve"),
      model: faux.getModel(),
      prompt: "clean up /tmp/x",
    });
    const id = handle.workflowId;
    const result = await worker.runUntil(async () => {
      await untilWaiting(handle);
      const [asJson, plain, listed, wrongCall] = await Promise.all([
        jaiAgent(["state", id, "--json"]),
        jaiAgent(["state", id]),
        eventually(
          "runs --status waiting to list the run",
          () => jaiAgent(["runs", "--status", "waiting", "--json", "--limit", "1000"]),
          (out) => out.stdout.includes(id),
        ),
        jaiAgent(["approve", id, "no-such-call"]),
      ]);
      expect(asJson.code).toBe(0);
      const state = JSON.parse(asJson.stdout) as AgentRunState;
      expect(state.status).toBe("waiting_for_approval");
      expect(state.pendingApprovals).toMatchObject([{ toolCallId: "del-1", toolName: "delete_all" }]);
      expect(plain.code).toBe(0);
      expect(plain.stdout).toContain(`run ${id}: waiting_for_approval`);
      expect(plain.stdout).toContain(`jai-agent approve ${id} del-1`);
      const row = (JSON.parse(listed.stdout) as { workflowId: string; status: string }[]).find(
        (r) => r.workflowId === id,
      );
      expect(row?.status).toBe("waiting_for_approval");
      expect(listed.code).toBe(0);
      // The run's validator refuses an unknown call: its reason, one line, exit 1; the run still waits.
      expect(wrongCall.code).toBe(1);
      expect(wrongCall.stderr.trim()).toMatch(/^approve rejected: .*no-such-call/);
      expect(wrongCall.stderr.trim().split("\n")).toHaveLength(1);
      expect(danger.ran).toEqual([]);

      const approved = await jaiAgent(["approve", id, "del-1"]);
      expect(approved.stderr).toBe("");
      expect(approved.stdout.trim()).toBe("approved del-1");
      expect(approved.code).toBe(0);
      return within(handle.result(), 30000, "the run's result");
    });
    expect(danger.ran).toEqual(["/tmp/x"]);
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe("model saw: deleted /tmp/x");

    // After the end: a finished run and an unknown run are one line each, exit 1.
    const [again, unknown, completed] = await Promise.all([
      jaiAgent(["approve", id, "del-1"]),
      jaiAgent(["state", `${id}-nope`]),
      eventually(
        "runs --status completed to list the run",
        () => jaiAgent(["runs", "--status", "completed", "--limit", "1000"]),
        (out) => out.stdout.includes(id),
      ),
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`run ${id} finished with stop`);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe(`no run "${id}-nope" in namespace "default"`);
    expect(completed.stdout.split("\n").find((l) => l.startsWith(id))).toMatch(new RegExp(`^${id}\\s+completed\\s`));
  }, 180000);

  it("deny <id> <callId> --reason: the tool never runs and the model sees the reason", async () => {
    const danger = approvalTool();
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/etc" }, { id: "del-2" })], { stopReason: "toolUse" }),
      (context) => fauxAssistantMessage(`model saw: ${lastToolResultText(context)}`),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-deny"),
      model: faux.getModel(),
      prompt: "clean up /etc",
    });
    const result = await worker.runUntil(async () => {
      await untilWaiting(handle);
      const denied = await jaiAgent(["deny", handle.workflowId, "del-2", "--reason", "not /etc, ever"]);
      expect(denied.stdout.trim()).toBe("denied del-2");
      expect(denied.code).toBe(0);
      return within(handle.result(), 30000, "the run's result");
    });
    expect(danger.ran).toEqual([]);
    expect(textOf(result.messages.at(-1))).toBe("model saw: Tool call denied by the user: not /etc, ever");
  }, 120000);

  it("the plain Temporal CLI route (update approve / deny with a string input), then approve --all", async () => {
    const temporal = findTemporalCli();
    expect(temporal).toBeDefined();
    const danger = approvalTool();
    const faux = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("delete_all", { path: "/a" }, { id: "c1" }),
          fauxToolCall("delete_all", { path: "/b" }, { id: "c2" }),
          fauxToolCall("delete_all", { path: "/c" }, { id: "c3" }),
          fauxToolCall("delete_all", { path: "/d" }, { id: "c4" }),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-temporal"),
      model: faux.getModel(),
      prompt: "clean up",
    });
    const id = handle.workflowId;
    const result = await worker.runUntil(async () => {
      await untilWaiting(handle, 4);
      const address = ["--address", process.env.TEMPORAL_ADDRESS!];
      const update = ["workflow", "update", "execute", "--workflow-id", id, ...address];
      const approved = await runProgram(temporal!, [...update, "--name", "approve", "--input", '"c1"']);
      expect(approved.stderr).toBe("");
      expect(approved.code).toBe(0);
      const denied = await runProgram(temporal!, [...update, "--name", "deny", "--input", '"c2"', "--input", '"no"']);
      expect(denied.code).toBe(0);
      expect((await handle.state()).pendingApprovals.map((a) => a.toolCallId)).toEqual(["c3", "c4"]);
      const all = await jaiAgent(["approve", id, "--all"]);
      expect(all.stdout.trim().split("\n")).toEqual(["approved c3", "approved c4"]);
      expect(all.code).toBe(0);
      return within(handle.result(), 30000, "the run's result");
    });
    expect(danger.ran.sort()).toEqual(["/a", "/c", "/d"]);
    expect(result.messages.filter((m) => m.role === "toolResult").map((m) => textOf(m))).toEqual([
      "deleted /a",
      "Tool call denied by the user: no",
      "deleted /c",
      "deleted /d",
    ]);
  }, 120000);

  it("steer and follow-up: each message reaches the model; cancel ends a run aborted and runs --status cancelled lists it", async () => {
    const gate = gateTool("g");
    const contexts: string[] = [];
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("g", {})], { stopReason: "toolUse" }),
      (context) => (contexts.push(lastUserText(context)), fauxAssistantMessage(`ok: ${lastUserText(context)}`)),
      (context) => (contexts.push(lastUserText(context)), fauxAssistantMessage(`ok: ${lastUserText(context)}`)),
    ]);
    const { worker, taskQueue } = await testWorker(env, [gate.tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-steer"),
      model: faux.getModel(),
      prompt: "work",
    });
    const result = await worker.runUntil(async () => {
      await within(gate.entered.promise, 20000, "the gate tool");
      const steered = await jaiAgent(["steer", handle.workflowId, "look", "at", "the", "tests"]);
      expect(steered.stdout.trim()).toBe("steering accepted (1 queued)");
      expect(steered.code).toBe(0);
      const followed = await jaiAgent(["follow-up", handle.workflowId, "then write the summary"]);
      expect(followed.stdout.trim()).toBe("follow-up accepted (1 queued)");
      expect(followed.code).toBe(0);
      gate.release.resolve();
      return within(handle.result(), 30000, "the run's result");
    });
    expect(contexts).toEqual(["look at the tests", "then write the summary"]);
    expect(result.stopReason).toBe("stop");

    // cancel: a run waiting for approval ends "aborted"; cancelling it again says it finished.
    const danger = approvalTool();
    const faux2 = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/z" }, { id: "z" })], { stopReason: "toolUse" }),
    ]);
    const second = await testWorker(env, [danger.tool]);
    const doomed = await startAgentRun(env.client, {
      taskQueue: second.taskQueue,
      workflowId: uniqueId("cli-cancel"),
      model: faux2.getModel(),
      prompt: "delete z",
    });
    const ended = await second.worker.runUntil(async () => {
      await untilWaiting(doomed);
      const cancelled = await jaiAgent(["cancel", doomed.workflowId, "--wait"]);
      expect(cancelled.stdout.trim().split("\n")).toEqual([
        `cancellation requested: ${doomed.workflowId}`,
        "ended: aborted",
      ]);
      expect(cancelled.code).toBe(0);
      return doomed.result();
    });
    expect(ended.stopReason).toBe("aborted");
    expect(danger.ran).toEqual([]);
    const [again, listed] = await Promise.all([
      jaiAgent(["cancel", doomed.workflowId]),
      eventually(
        "runs --status cancelled to list the run",
        () => jaiAgent(["runs", "--status", "cancelled", "--json", "--limit", "1000"]),
        (out) => out.stdout.includes(doomed.workflowId),
      ),
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim()).toBe(`run ${doomed.workflowId} finished with aborted`);
    expect(JSON.parse(listed.stdout).find((r: { workflowId: string }) => r.workflowId === doomed.workflowId)).toEqual(
      expect.objectContaining({ status: "cancelled", stopReason: "aborted" }),
    );
  }, 180000);

  it("prompt <id> <message> on a session prints the answer; bad usage exits 2 with the usage", async () => {
    const faux = fauxModel(
      Array.from({ length: 2 }, () => (context: Context) => fauxAssistantMessage(`reply to ${lastUserText(context)}`)),
    );
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("cli-session"),
      model: faux.getModel(),
      prompt: "one",
      session: true,
    });
    await worker.runUntil(async () => {
      await eventually(
        "the session to wait for a prompt",
        () => handle.state(),
        (s) => s.status === "waiting_for_prompt",
      );
      const answer = await jaiAgent(["prompt", handle.workflowId, "two"]);
      expect(answer.stdout.trim()).toBe("reply to two");
      expect(answer.code).toBe(0);
      // steer on an idle session: the run's own reason, one line.
      const refused = await jaiAgent(["steer", handle.workflowId, "hey"]);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim()).toMatch(/^steer rejected: The session is waiting for a prompt/);
      await handle.close();
      await handle.result();
    });
    const [noMessage, noId, unknownFlag] = await Promise.all([
      jaiAgent(["steer", handle.workflowId]),
      jaiAgent(["state"]),
      jaiAgent(["runs", "--colour", "red"]),
    ]);
    for (const out of [noMessage, noId, unknownFlag]) {
      expect(out.code).toBe(2);
      expect(out.stderr).toContain("usage: jai-agent <command>");
    }
  }, 120000);
});

describe("jai-agent and Temporal's environment configuration", () => {
  it("TEMPORAL_NAMESPACE picks the namespace; one without the agent search attributes is listed by Temporal's status", async () => {
    const namespace = uniqueId("cli-plain");
    await env.client.connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs("1 day"),
    });
    const client = new Client({ connection: env.client.connection, namespace });
    const workflowId = uniqueId("cli-plain-run");
    // No worker: the run stays open, which is all a listing needs. A new namespace reaches every service within its cache refresh.
    await eventually(
      "the new namespace to take a run",
      () =>
        client.workflow
          .start(AGENT_RUN_WORKFLOW, {
            taskQueue: uniqueId("nowhere"),
            workflowId,
            args: [{ model: "x/y", prompt: "hi" }],
          })
          .then(
            () => true,
            (err: Error) => (/namespace/i.test(err.message) ? false : Promise.reject(err)),
          ),
      (started) => started,
    );
    const listed = await eventually(
      "runs --status running in the namespace",
      () => jaiAgent(["runs", "--status", "running", "--json"], { TEMPORAL_NAMESPACE: namespace }),
      (out) => out.stdout.includes(workflowId),
    );
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ workflowId, status: "running" })]);
    expect(listed.stderr).toContain(`namespace "${namespace}" lacks the AgentStatus search attribute`);
    // In the default namespace (TEMPORAL_NAMESPACE unset) it is not there.
    const elsewhere = await jaiAgent(["runs", "--status", "running", "--json", "--limit", "1000"]);
    expect(elsewhere.stdout).not.toContain(workflowId);
    await client.workflow.getHandle(workflowId).terminate("test over");
    // The worker's configuration checks apply: a missing config file is an error, not a silent localhost.
    const badConfig = await jaiAgent(["runs"], { TEMPORAL_CONFIG_FILE: "/nonexistent/temporal.toml" });
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr.trim()).toBe(
      "Temporal environment configuration: TEMPORAL_CONFIG_FILE=/nonexistent/temporal.toml does not exist",
    );
  }, 120000);
});

describe("jai-agent and codec keys", () => {
  it("an encrypted run: state and show without keys name the key id and JAI_CODEC_KEYS (exit 1); with the keys they read it; runs lists it either way", async () => {
    const sentinel = `CLISEC${Date.now().toString(36)}`;
    const dataConverter = dataConverterFromEnv({ JAI_CODEC_KEYS: KEY })!;
    const bundle = await sharedBundle("encrypted-failures");
    const danger = approvalTool();
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: `/${sentinel}` }, { id: "e1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage(`${sentinel}-final`),
    ]);
    const { worker, taskQueue } = await testWorker(env, [danger.tool], {
      dataConverter,
      workflowBundle: bundle,
    });
    const client = new Client({ connection: env.client.connection, dataConverter });
    const handle = await startAgentRun(client, {
      taskQueue,
      workflowId: uniqueId("cli-sealed"),
      model: faux.getModel(),
      prompt: `${sentinel}-prompt`,
    });
    const id = handle.workflowId;
    const missing = new RegExp(`key "K7".*JAI_CODEC_KEYS`);
    await worker.runUntil(async () => {
      await untilWaiting(handle);
      const [blind, seeing, listed] = await Promise.all([
        jaiAgent(["state", id]),
        jaiAgent(["state", id, "--json"], { JAI_CODEC_KEYS: KEY }),
        eventually(
          "runs without keys to list the run",
          () => jaiAgent(["runs", "--status", "waiting_for_approval", "--limit", "1000"]),
          (out) => out.stdout.includes(id),
        ),
      ]);
      expect(blind.code).toBe(1);
      expect(blind.stderr).toMatch(missing);
      expect(blind.stderr).not.toMatch(/Unknown encoding/);
      expect(seeing.code).toBe(0);
      expect(JSON.parse(seeing.stdout).pendingApprovals[0].args).toEqual({ path: `/${sentinel}` });
      expect(listed.code).toBe(0);
      // Approving writes the call id into history: encrypted with the keys, so it needs them too.
      const approved = await jaiAgent(["approve", id, "e1"], { JAI_CODEC_KEYS: KEY });
      expect(approved.code).toBe(0);
      await within(handle.result(), 30000, "the run's result");
    });
    const showArgs = ["show", id];
    const [blindShow, show, blindState] = await Promise.all([
      jaiAgent(showArgs),
      jaiAgent(showArgs, { JAI_CODEC_KEYS: KEY }),
      jaiAgent(["state", id]),
    ]);
    expect(blindShow.code).toBe(1);
    expect(blindShow.stderr.trim()).toMatch(missing);
    expect(blindShow.stderr).not.toMatch(/Unknown encoding/);
    expect(blindState.code).toBe(1);
    expect(blindState.stderr).toMatch(missing);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain(`${sentinel}-prompt`);
    expect(show.stdout).toContain(`${sentinel}-final`);
  }, 180000);
});

describe("jai-agent watch against the production worker process (issue 38, row 1)", () => {
  it("prints every assistant text, the final answer included, for a run served by `jai-agent worker`", async () => {
    const taskQueue = uniqueId("watch-worker");
    // The worker process as the README's production recipe runs it: no run server, so watch rebuilds from history.
    const worker = await startSourceWorker(["--task-queue", taskQueue, "--health-port", "0"]);
    try {
      const workflowId = uniqueId("watch-run");
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId,
        model: "demo/offline-scripted",
        prompt: "What is this project?",
      });
      const result = await handle.result();
      const texts = result.messages
        .filter((m) => m.role === "assistant")
        .map((m) => textOf(m))
        .filter((t) => t.trim().length > 0);
      expect(texts.length).toBeGreaterThan(0);
      const watched = await jaiAgent(["watch", workflowId]);
      expect(watched.code).toBe(0);
      // Every line of every assistant text is on the screen, the final answer's last line included.
      for (const text of texts)
        for (const line of text.split("\n").filter((l) => l.trim())) expect(watched.stdout).toContain(line);
      expect(watched.stdout).toMatch(/completed after 3 turn/);
    } finally {
      await worker.kill();
    }
  });
});
