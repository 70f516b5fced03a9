/**
 * MCP servers going bad (issue #36, row 8), from the attacker's side: real
 * server processes (test/fixtures/mcp-bad-server.ts over stdio, a URL with
 * nothing listening), a real Temporal dev server, a faux model that records
 * the tools it was offered.
 */
import { afterAll, beforeAll, describe, expect, it, jest } from "@jest/globals";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxToolCall, Type, type Tool } from "@jai/ai";
import { WorkflowFailedError } from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import { startAgentRun } from "../../src/client/client.js";
import type { McpServerConfig } from "../../src/worker/mcp/config.js";
import { McpServerUnavailable, McpToolSource } from "../../src/worker/mcp/source.js";
import type { AgentTool, AgentToolResult } from "../../src/shared/contracts.js";
import { fauxModel, openTestEnv, testWorker, textOf, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

let env: TestEnv;
let folder: string;
beforeAll(async () => {
  env = await openTestEnv();
  folder = mkdtempSync(path.join(tmpdir(), "jai-mcp-bad-"));
});
afterAll(async () => {
  await env?.close();
  rmSync(folder, { recursive: true, force: true });
});

const root = fileURLToPath(new URL("../..", import.meta.url));
const fixture = path.join(root, "test", "fixtures", "mcp-bad-server.ts");

/** The fixture server in `mode`, as a process the worker starts. */
function badServer(name: string, mode: string, ...args: string[]): McpServerConfig {
  return {
    name,
    transport: {
      type: "stdio",
      command: process.execPath,
      args: [...nodeEntry(fixture), mode, ...args],
      cwd: root,
    },
  };
}

/** A server that exits at once, counting its starts in a file. */
function exitingServer(name: string): { config: McpServerConfig; starts: () => number } {
  const file = path.join(folder, `${name}-${uniqueId("starts")}`);
  return {
    config: badServer(name, "exit", file),
    starts: () => {
      try {
        return readFileSync(file, "utf8").split("\n").filter(Boolean).length;
      } catch {
        return 0;
      }
    },
  };
}

/** An http URL on a port nothing listens on (taken, then released). */
async function deadUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return `http://127.0.0.1:${port}/mcp`;
}

const text = (t: string): AgentToolResult => ({ content: [{ type: "text", text: t }] });
const nativeTool = (name: string): AgentTool => ({
  name,
  description: "the native tool",
  parameters: Type.Object({}),
  execute: async () => text(`native ${name} ran`),
});

const toolResultsOf = (messages: { role: string }[]) => messages.filter((m): m is any => m.role === "toolResult");
const bytes = (s: string) => Buffer.byteLength(s, "utf8");

/** Starts a run whose model records the tools offered, makes `calls` in one turn, then stops. */
async function run(
  servers: McpServerConfig[],
  native: AgentTool[],
  calls: ReturnType<typeof fauxToolCall>[],
  tools?: string[],
) {
  const offered: Tool[][] = [];
  const faux = fauxModel([
    (context) => {
      offered.push(context.tools ?? []);
      return fauxAssistantMessage(calls, { stopReason: "toolUse" });
    },
    fauxAssistantMessage("done"),
  ]);
  const { worker, taskQueue } = await testWorker(env, native, { mcpServers: servers });
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("mcp-bad"),
    model: faux.getModel(),
    prompt: "go",
    ...(tools ? { tools } : {}),
  });
  return { worker, handle, offered };
}

describe("an unreachable MCP server", () => {
  it("runs that do not name its tools start and complete; a run naming one fails with McpServerUnavailable", async () => {
    const exiting = exitingServer("gone");
    const servers = [
      exiting.config,
      { name: "nobody", transport: { type: "http" as const, url: await deadUrl() } },
      badServer("good", "collide"),
    ];
    // No `tools` list: every tool, the healthy server's included.
    const all = await run(
      servers,
      [nativeTool("native_echo")],
      [fauxToolCall("native_echo", {}), fauxToolCall("good__echo", {})],
    );
    const result = await all.worker.runUntil(within(all.handle.result(), 45_000, "the run to end"));
    expect(result.stopReason).toBe("stop");
    expect(toolResultsOf(result.messages).map((m) => textOf(m))).toEqual([
      "native native_echo ran",
      "collide server ran echo",
    ]);
    const names = all.offered[0].map((t) => t.name);
    expect(names).toContain("native_echo");
    expect(names).toContain("good__echo");
    expect(names.filter((n) => n.startsWith("gone__") || n.startsWith("nobody__"))).toEqual([]);

    // Only native tools named.
    const nativeOnly = await run(
      servers,
      [nativeTool("native_echo")],
      [fauxToolCall("native_echo", {})],
      ["native_echo"],
    );
    const second = await nativeOnly.worker.runUntil(within(nativeOnly.handle.result(), 45_000, "the run to end"));
    expect(second.stopReason).toBe("stop");
    expect(textOf(toolResultsOf(second.messages)[0])).toBe("native native_echo ran");

    // A run that names one of its tools fails at setup, naming the server.
    const named = await run(servers, [nativeTool("native_echo")], [], ["native_echo", "gone__anything"]);
    const err = await named.worker.runUntil(
      within(named.handle.result(), 45_000, "the run to fail").then(
        (r) => r,
        (e: unknown) => e,
      ),
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe(McpServerUnavailable);
    expect(cause!.message).toMatch(/MCP server "gone", whose tools the run names, is unavailable/);
    expect(named.offered).toEqual([]);
  }, 120_000);

  it("is asked again with backoff, not by every listing, and the failure is reported", async () => {
    const exiting = exitingServer("gone");
    const warnings: string[] = [];
    const mcp = new McpToolSource(
      [{ ...exiting.config, retryBackoff: { initialMs: 500, maxMs: 1_000 } }, badServer("good", "collide")],
      process.env,
      { warn: (m) => void warnings.push(m) },
    );
    // The source's clock, held still and moved by the test: which listing falls within the backoff is then the
    // test's choice, not how fast this machine lists a server (a busy one took longer than the 500 ms).
    let now = Date.now();
    const clock = jest.spyOn(Date, "now").mockImplementation(() => now);
    try {
      expect((await mcp.listTools()).map((t) => t.name)).toEqual(["good__get_value", "good__echo"]);
      expect(exiting.starts()).toBe(1);
      expect(warnings.filter((w) => w.includes('MCP server "gone" is unavailable'))).toHaveLength(1);
      const [gone] = mcp.status();
      expect(gone).toMatchObject({ name: "gone", ok: false, failures: 1, retryAt: now + 500 });
      // Within the backoff: not started again, by listings of all tools nor by one naming its tools.
      now += 499;
      await mcp.listTools();
      await mcp.listTools();
      const refused = await mcp.listTools(["gone__x"]).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ApplicationFailure);
      expect((refused as ApplicationFailure).type).toBe(McpServerUnavailable);
      expect(exiting.starts()).toBe(1);
      // Once the backoff is over it is tried again, and the next wait doubles.
      now = gone.retryAt!;
      await mcp.listTools();
      expect(exiting.starts()).toBe(2);
      expect(mcp.status()[0]).toMatchObject({ failures: 2, retryAt: now + 1_000 });
    } finally {
      clock.mockRestore();
      await mcp.close();
    }
  }, 60_000);
});

describe("oversized tool lists", () => {
  it("a 3 MB description is cut, a 100 KB schema's tool is dropped, and the run completes with small history", async () => {
    const { worker, handle, offered } = await run(
      [badServer("huge", "huge")],
      [],
      [fauxToolCall("huge__big", {}), fauxToolCall("huge__ok", {})],
    );
    const result = await worker.runUntil(within(handle.result(), 45_000, "the run to end (it must never hang)"));
    expect(result.stopReason).toBe("stop");
    expect(toolResultsOf(result.messages).map((m) => textOf(m))).toEqual(["huge server ran big", "huge server ran ok"]);
    const tools = offered[0];
    expect(tools.map((t) => t.name)).toEqual(["huge__big", "huge__ok"]);
    const big = tools[0].description;
    expect(bytes(big)).toBeLessThanOrEqual(4096);
    expect(big).toMatch(/^é+ …\[cut by the worker: 3000000 bytes, over the 4096-byte cap\]$/);
    // Nothing near the 2 MB payload limit reached history.
    const history = await handle.workflow.fetchHistory();
    expect(bytes(JSON.stringify(history))).toBeLessThan(200_000);
  }, 120_000);
});

describe("tool names that sanitize alike", () => {
  it("only the first of a server's two is offered, a native tool wins over a server's, and calls reach the tool offered", async () => {
    const { worker, handle, offered } = await run(
      [badServer("pair", "collide")],
      [nativeTool("pair__echo")],
      [fauxToolCall("pair__get_value", {}), fauxToolCall("pair__echo", {})],
    );
    const result = await worker.runUntil(within(handle.result(), 45_000, "the run to end"));
    expect(result.stopReason).toBe("stop");
    const tools = offered[0];
    const names = tools.map((t) => t.name);
    expect(names.sort()).toEqual(["pair__echo", "pair__get_value"]);
    expect(tools.find((t) => t.name === "pair__get_value")!.description).toBe("dotted");
    expect(tools.find((t) => t.name === "pair__echo")!.description).toBe("the native tool");
    expect(toolResultsOf(result.messages).map((m) => textOf(m))).toEqual([
      "collide server ran get.value",
      "native pair__echo ran",
    ]);
  }, 120_000);

  it("a worker that did not set the run up reaches the same tool, and the warning names both", async () => {
    const warnings: string[] = [];
    const mcp = new McpToolSource([badServer("pair", "collide")], process.env, { warn: (m) => void warnings.push(m) });
    try {
      const found = await mcp.find("pair__get_value");
      expect(found?.description).toBe("dotted");
      expect(textOf(await found!.execute("c1", {}))).toBe("collide server ran get.value");
      expect(warnings).toEqual([
        "MCP tool pair: get_value is not offered: its name pair__get_value is taken by pair: get.value, listed before it",
      ]);
    } finally {
      await mcp.close();
    }
  }, 60_000);
});
