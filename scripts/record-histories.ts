/**
 * Re-records the golden histories under test/fixtures/histories/ (not frozen/):
 * representative runs on a fresh dev server, one JSON history each, in the
 * format `temporal workflow show --output json` and the UI export use.
 *
 *   npm run record-histories             (all of them)
 *   npm run record-histories -- fast-tools  (only the named cases)
 *
 * test/process/replay.test.ts replays every file against the current workflow code.
 * Files under frozen/ are never rewritten: they prove that histories recorded
 * before a `patched()` change still replay.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Client, Connection, type WorkflowHandle } from "@temporalio/client";
import { historyToJSON } from "@temporalio/common/lib/proto-utils.js";
import proto from "@temporalio/proto";
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import {
  fauxAssistantMessage,
  fauxToolCall,
  registerFauxProvider,
  Type,
  type Api,
  type FauxResponseStep,
  type Model,
} from "@jai/ai";
import { startAgentRun, type AgentRunHandle, type StartAgentRunOptions } from "../src/client/client.js";
import { startDevServer } from "../src/node/dev-server.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { bundleAgentWorkflows, createAgentWorker } from "../src/worker/worker.js";
import { agentTool } from "../src/worker/subagents/agent-tool.js";
import { runScenario } from "../test/support/crash/harness.js";

const OUT = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../test/fixtures/histories");

const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
const tools: AgentTool<any>[] = [
  {
    name: "read",
    description: "read",
    parameters: Type.Object({ path: Type.String() }),
    executionMode: "parallel",
    execute: async (_id, a: any) => text(`contents of ${a.path}`),
  },
  {
    name: "write",
    description: "write",
    parameters: Type.Object({ path: Type.String() }),
    executionMode: "sequential",
    execute: async (_id, a: any) => text(`wrote ${a.path}`),
  },
  {
    name: "add",
    description: "add",
    parameters: Type.Object({ a: Type.Number(), b: Type.Number() }),
    execute: async (_id, a: any) => text(String(a.a + a.b)),
  },
  {
    name: "fail",
    description: "fail",
    parameters: Type.Object({}),
    execute: async () => {
      throw new Error("disk on fire");
    },
  },
  {
    name: "lookup",
    description: "lookup",
    parameters: Type.Object({ key: Type.String() }),
    fast: true,
    execute: async (_id, a: any) => text(`value of ${a.key}`),
  },
  {
    name: "finish",
    description: "finish",
    parameters: Type.Object({}),
    execute: async () => ({ ...text("finished"), terminate: true }),
  },
  {
    name: "delete_all",
    description: "delete",
    parameters: Type.Object({ path: Type.String() }),
    requiresApproval: true,
    execute: async (_id, a: any) => text(`deleted ${a.path}`),
  },
];

interface Case {
  name: string;
  script: FauxResponseStep[];
  options?: Partial<StartAgentRunOptions>;
  /** Drives the run from outside (updates) before waiting for its result. */
  drive?: (handle: AgentRunHandle) => Promise<void>;
  /** More worker tools, given the case's model (a sub-agent's). */
  moreTools?: (model: Model<Api>) => AgentTool<any>[];
  /** Child runs to record beside the run, by their workflow id's suffix after the run's (`/sub-1-0`). */
  children?: Record<string, string>;
  /** The model as a fallback chain (the case's model twice). */
  chain?: boolean;
}

const answer = fauxAssistantMessage("done");
const CASES: Case[] = [
  { name: "text-only", script: [fauxAssistantMessage("Hello! How can I help?")] },
  {
    name: "parallel-and-sequential-tools",
    script: [
      fauxAssistantMessage(
        [
          fauxToolCall("read", { path: "a" }, { id: "r1" }),
          fauxToolCall("read", { path: "b" }, { id: "r2" }),
          fauxToolCall("write", { path: "c" }, { id: "w1" }),
          fauxToolCall("read", { path: "d" }, { id: "r3" }),
        ],
        {
          stopReason: "toolUse",
        },
      ),
      answer,
    ],
  },
  {
    name: "validation-error",
    script: [
      fauxAssistantMessage([fauxToolCall("add", { a: "three" }, { id: "v1" })], { stopReason: "toolUse" }),
      answer,
    ],
  },
  {
    name: "thrown-tool-error",
    script: [fauxAssistantMessage([fauxToolCall("fail", {}, { id: "f1" })], { stopReason: "toolUse" }), answer],
  },
  {
    name: "terminate",
    script: [
      fauxAssistantMessage([fauxToolCall("finish", {}, { id: "t1" }), fauxToolCall("finish", {}, { id: "t2" })], {
        stopReason: "toolUse",
      }),
    ],
  },
  {
    name: "max-turns",
    script: [1, 2, 3].map((i) =>
      fauxAssistantMessage([fauxToolCall("add", { a: i, b: i }, { id: `m${i}` })], { stopReason: "toolUse" }),
    ),
    options: { maxTurns: 2 },
  },
  {
    // Fast tools run as local activities (markers), next to a regular tool call; the setup is a local activity too.
    name: "fast-tools",
    script: [
      fauxAssistantMessage(
        [
          fauxToolCall("lookup", { key: "a" }, { id: "l1" }),
          fauxToolCall("lookup", { key: "b" }, { id: "l2" }),
          fauxToolCall("read", { path: "c" }, { id: "r1" }),
        ],
        {
          stopReason: "toolUse",
        },
      ),
      fauxAssistantMessage([fauxToolCall("lookup", { key: "c" }, { id: "l3" })], { stopReason: "toolUse" }),
      answer,
    ],
    options: { tools: ["lookup", "read"] },
  },
  {
    name: "approval-denied",
    script: [
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/" }, { id: "d1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("ok, I will not"),
    ],
    drive: async (handle) => {
      await stateWhen(handle, (s) => s.pendingApprovals.length > 0);
      await handle.deny("d1", "never delete /");
    },
  },
  {
    // The features added after baseline v3: a budget, an approval policy, a client tool whose call waits beside a
    // fast tool's (a local activity) and an approved one.
    name: "later-features",
    script: [
      fauxAssistantMessage(
        [
          fauxToolCall("lookup", { key: "a" }, { id: "l1" }),
          fauxToolCall("read", { path: "b" }, { id: "r1" }),
          fauxToolCall("pick_color", { hint: "warm" }, { id: "c1" }),
        ],
        { stopReason: "toolUse" },
      ),
      answer,
    ],
    options: {
      tools: ["lookup", "read"],
      budget: { maxToolCalls: 10 },
      approvalPolicy: { rules: [{ match: "read", action: "ask" }] },
      clientTools: [
        {
          name: "pick_color",
          description: "Asks the user to pick a color",
          parameters: { type: "object", properties: { hint: { type: "string" } } },
        },
      ],
    },
    drive: async (handle) => {
      await stateWhen(handle, (s) => s.pendingApprovals.some((a) => a.toolCallId === "r1"));
      await handle.approve("r1");
      await stateWhen(handle, (s) => (s.pendingClientResults ?? []).some((p) => p.toolCallId === "c1"));
      await handle.submitToolResult("c1", { color: "red" });
    },
  },
  // One golden per run feature (issue 55): each replays against the current loop, so a change that moves a
  // feature's commands is caught here, not in a customer's replay.
  {
    // Typed output: an invalid final answer corrected once, then accepted.
    name: "typed-output",
    script: [
      fauxAssistantMessage([fauxToolCall("final_answer", { town: "Lisbon" }, { id: "o1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxToolCall("final_answer", { city: "Lisbon" }, { id: "o2" })], { stopReason: "toolUse" }),
    ],
    options: {
      output: Type.Object({ city: Type.String() }),
      outputRetries: 1,
    },
  },
  {
    // A budget: a batch past maxToolCalls, the calls past it refused, the run ended "budget".
    name: "budget-exceeded",
    script: [
      fauxAssistantMessage(
        [fauxToolCall("add", { a: 1, b: 1 }, { id: "b1" }), fauxToolCall("add", { a: 2, b: 2 }, { id: "b2" })],
        { stopReason: "toolUse" },
      ),
      answer,
    ],
    options: { budget: { maxToolCalls: 1, maxTokens: 100000 } },
  },
  {
    // A model fallback chain (its setup names the fallback) and a policy floor the run's own policy cannot loosen.
    name: "chain-and-floor",
    script: [
      fauxAssistantMessage([fauxToolCall("write", { path: "x" }, { id: "p1" })], { stopReason: "toolUse" }),
      answer,
    ],
    options: {
      approvalPolicy: { default: "allow" },
      approvalPolicyFloor: [{ rules: [{ match: "write", action: "deny", reason: "read-only agent" }] }],
    },
    chain: true,
  },
  {
    // A sub-agent (a child run) of a tenant's run: the child carries the tenant; its own history is recorded too.
    name: "sub-agent",
    script: [
      fauxAssistantMessage([fauxToolCall("helper", { prompt: "find it" }, { id: "h1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("found it"),
      answer,
    ],
    moreTools: (model) => [agentTool({ name: "helper", description: "helps", model })],
    options: { tools: ["helper"], tenant: "acme" },
    children: { "sub-agent-child": "/sub-1-0" },
  },
];

/** Polls the run's state until `ok` holds. */
async function stateWhen(handle: AgentRunHandle, ok: (s: Awaited<ReturnType<AgentRunHandle["state"]>>) => boolean) {
  for (;;) {
    if (ok(await handle.state())) return;
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const dir = await mkdtemp(path.join(os.tmpdir(), "jai-record-"));
  const server = await startDevServer({ dbFile: path.join(dir, "record.db"), uiPort: false, log: console.log });
  const connection = await NativeConnection.connect({ address: server.address });
  const clientConnection = await Connection.connect({ address: server.address });
  const client = new Client({ connection: clientConnection });
  const bundle = await bundleAgentWorkflows();
  await mkdir(OUT, { recursive: true });
  const save = async (name: string, handle: AgentRunHandle | WorkflowHandle) => {
    const file = path.join(OUT, `${name}.json`);
    const workflow = "workflow" in handle ? handle.workflow : handle;
    const history = proto.temporal.api.history.v1.History.fromObject(await workflow.fetchHistory());
    await writeFile(file, `${historyToJSON(history)}\n`);
    console.log(`recorded ${path.relative(process.cwd(), file)}`);
  };
  try {
    const only = process.argv.slice(2);
    for (const c of CASES.filter((c) => only.length === 0 || only.includes(c.name))) {
      const faux = registerFauxProvider({ api: `record-${c.name}`, provider: "faux" });
      faux.setResponses(c.script);
      const taskQueue = `record-${c.name}`;
      const model = faux.getModel()!;
      const worker = await createAgentWorker({
        connection,
        taskQueue,
        tools: [...tools, ...(c.moreTools?.(model) ?? [])],
        workflowBundle: bundle,
      });
      const handle = await startAgentRun(client, {
        taskQueue,
        workflowId: `golden-${c.name}`,
        model: c.chain ? [model, model] : model,
        prompt: `golden ${c.name}`,
        ...c.options,
      });
      await worker.runUntil(async () => {
        await c.drive?.(handle);
        await handle.result();
      });
      await save(c.name, handle);
      for (const [name, suffix] of Object.entries(c.children ?? {}))
        await save(name, client.workflow.getHandle(`${handle.workflowId}${suffix}`));
    }
    if (only.length > 0 && !only.includes("crash-recovered")) return;
    // A run whose worker process was killed during a sequential tool and finished by another.
    const bundlePath = path.join(dir, "bundle.js");
    await writeFile(bundlePath, bundle.code);
    const crashed = await runScenario(
      client,
      {
        address: server.address,
        bundlePath,
        logFile: path.join(dir, "crash.log"),
        taskQueue: "record-crash",
        variant: "main",
      },
      (log) => log.some((e) => e.event === "tool_start" && e.toolCallId === "t2-d"),
    );
    await save("crash-recovered", crashed.handle);
  } finally {
    await connection.close();
    await clientConnection.close();
    await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
