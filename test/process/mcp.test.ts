/**
 * MCP servers as tool sources, against a real third-party server
 * (@modelcontextprotocol/server-filesystem over stdio) and a Streamable HTTP
 * server written with the SDK. Real Temporal dev server, faux model.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fauxAssistantMessage, fauxToolCall } from "@jai/ai";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { defineSearchAttributeKey } from "@temporalio/common";
import { MockActivityEnvironment } from "@temporalio/testing";
import { createActivities } from "../../src/worker/activities/index.js";
import { startAgentRun } from "../../src/client/client.js";
import { McpToolSource } from "../../src/worker/mcp/source.js";
import type { McpServerConfig } from "../../src/worker/mcp/config.js";
import type { AgentEvent } from "../../src/shared/contracts.js";
import {
  deferred,
  fauxModel,
  openTestEnv,
  testWorker,
  textOf,
  uniqueId,
  within,
  type TestEnv,
} from "../support/helpers.js";

let env: TestEnv;
let folder: string;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

const serverScript = fileURLToPath(
  new URL("../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", import.meta.url),
);

function filesystemServer(root: string, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return { name: "fs", transport: { type: "stdio", command: process.execPath, args: [serverScript, root] }, ...extra };
}

function newFolder(): string {
  folder = mkdtempSync(path.join(tmpdir(), "jai-mcp-"));
  return folder;
}
afterAll(() => {
  if (folder) rmSync(folder, { recursive: true, force: true });
});

async function runWith(
  servers: McpServerConfig[],
  calls: ReturnType<typeof fauxToolCall>[][],
  onEvent?: (e: AgentEvent) => void,
) {
  const faux = fauxModel([
    ...calls.map((batch) => fauxAssistantMessage(batch, { stopReason: "toolUse" })),
    fauxAssistantMessage("done"),
  ]);
  const { worker, taskQueue, events } = await testWorker(env, [], {
    mcpServers: servers,
    ...(onEvent ? { onEvent } : {}),
  });
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("mcp"),
    model: faux.getModel(),
    prompt: "go",
  });
  return { worker, handle, events };
}

const toolResultsOf = (messages: { role: string }[]) => messages.filter((m): m is any => m.role === "toolResult");

/** Pids of processes whose command line holds `marker` (the test's unique folder). */
function serverPids(marker: string): number[] {
  const out = execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((l) => l.includes(serverScript) && l.includes(marker))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
}

/** Polls (a process table, not a timer as synchronisation) until `check` holds. */
async function until<T>(check: () => T | undefined, what: string, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A writer's end of `fifo`, once some process is inside a call reading it (a
 * non-blocking open for writing succeeds only while a reader has it open).
 */
function writerOnceRead(fifo: string): number | undefined {
  try {
    return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENXIO") return undefined;
    throw err;
  }
}

describe("filesystem MCP server over stdio", () => {
  it("lists and reads files in its folder; a path outside is refused and becomes an error result", async () => {
    const root = newFolder();
    writeFileSync(path.join(root, "notes.txt"), "alpha beta");
    mkdirSync(path.join(root, "sub"));
    const { worker, handle } = await runWith(
      [filesystemServer(root, { deny: ["write_file", "edit_file", "move_file"] })],
      [
        [
          fauxToolCall("fs__list_directory", { path: root }),
          fauxToolCall("fs__read_text_file", { path: path.join(root, "notes.txt") }),
        ],
        [
          fauxToolCall("fs__read_text_file", { path: "/etc/hostname" }),
          fauxToolCall("fs__write_file", { path: path.join(root, "x"), content: "no" }),
        ],
      ],
    );
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const [list, read, outside, denied] = toolResultsOf(result.messages);
    expect(list.isError).toBe(false);
    expect(textOf(list)).toContain("[FILE] notes.txt");
    expect(textOf(list)).toContain("[DIR] sub");
    expect(read.isError).toBe(false);
    expect(textOf(read)).toBe("alpha beta");
    expect(outside.isError).toBe(true);
    expect(textOf(outside)).toMatch(/access denied|outside allowed/i);
    // The deny list keeps the tool from the run altogether.
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toMatch(/not found/);
    const tools = (await handle.workflow.describe()).typedSearchAttributes.get(
      defineSearchAttributeKey("AgentTools", "KEYWORD_LIST"),
    );
    expect(tools).toContain("fs__read_text_file");
    expect(tools).not.toContain("fs__write_file");
  });

  it("a worker that did not set the run up lists the server before running the call", async () => {
    const root = newFolder();
    writeFileSync(path.join(root, "a.txt"), "from a fresh worker");
    const mcp = new McpToolSource([filesystemServer(root)]);
    try {
      const { executeTool } = createActivities({ tools: [], mcp });
      const output = await new MockActivityEnvironment().run(executeTool, {
        toolCallId: "c1",
        toolName: "fs__read_text_file",
        args: { path: path.join(root, "a.txt") },
      });
      expect(output).toMatchObject({
        isError: false,
        result: { content: [{ type: "text", text: "from a fresh worker" }] },
      });
    } finally {
      await mcp.close();
    }
  });

  it.each([
    ["read-only tool: the call is repeated on a fresh server and succeeds", true],
    ["repeatAfterCrash: false: the call ends with a clear error result", false],
  ])("server killed mid-call, %s", async (_title, repeat) => {
    const root = newFolder();
    const fifo = path.join(root, "pipe");
    execFileSync("mkfifo", [fifo]);
    const { worker, handle } = await runWith(
      [filesystemServer(root, repeat ? {} : { repeatAfterCrash: false })],
      [[fauxToolCall("fs__read_text_file", { path: fifo })]],
    );
    const result = await worker.runUntil(async () => {
      // Reading a FIFO blocks until a writer comes: the call is in flight while the server waits on it.
      const held = await until(() => writerOnceRead(fifo), "the server to be inside the call");
      const [first] = serverPids(root);
      process.kill(first, "SIGKILL");
      closeSync(held);
      if (repeat) {
        const writer = await until(
          () => (serverPids(root).some((p) => p !== first) ? writerOnceRead(fifo) : undefined),
          "a fresh server to take the repeated call",
        );
        writeSync(writer, "after the crash");
        closeSync(writer);
      }
      return within(handle.result(), 60_000, "the run to end");
    });
    expect(result.stopReason).toBe("stop");
    const [read] = toolResultsOf(result.messages);
    if (repeat) {
      expect(read.isError).toBe(false);
      expect(textOf(read)).toBe("after the crash");
    } else {
      expect(read.isError).toBe(true);
      expect(textOf(read)).toMatch(/MCP server "fs" went away during the call.*not repeated/);
    }
  });
});

describe("Streamable HTTP MCP server", () => {
  let http: HttpServer;
  let url: string;
  const cancelled = deferred<string>();
  const called = deferred();
  const seenAuth: string[] = [];

  function mcpServer(): Server {
    const server = new Server({ name: "test-http", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({
      tools: [
        {
          name: "mix",
          description: "Returns mixed content",
          inputSchema: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
        },
        { name: "fail", description: "Always fails", inputSchema: { type: "object", properties: {} } },
        { name: "wait", description: "Waits until cancelled", inputSchema: { type: "object", properties: {} } },
        { name: "secret", description: "Filtered out by allow", inputSchema: { type: "object", properties: {} } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const name = request.params.name;
      if (name === "mix") {
        const word = String(request.params.arguments?.word);
        return {
          content: [
            { type: "text", text: `hello ${word}` },
            { type: "image", data: Buffer.from("png").toString("base64"), mimeType: "image/png" },
            { type: "resource", resource: { uri: "memo://one", mimeType: "text/plain", text: "resource body" } },
          ],
          structuredContent: { word },
        };
      }
      if (name === "fail") return { content: [{ type: "text", text: "it broke on purpose" }], isError: true };
      if (name === "wait") {
        called.resolve();
        await new Promise<void>((resolve) => extra.signal.addEventListener("abort", () => resolve(), { once: true }));
        cancelled.resolve(String(extra.signal.reason ?? "aborted"));
        return { content: [{ type: "text", text: "too late" }] };
      }
      return { content: [{ type: "text", text: "should not be reachable" }] };
    });
    return server;
  }

  beforeAll(async () => {
    const sessions = new Map<string, StreamableHTTPServerTransport>();
    // eslint-disable-next-line @typescript-eslint/no-misused-promises -- node's http server ignores the handler's returned promise
    http = createServer(async (req, res) => {
      seenAuth.push(String(req.headers.authorization));
      if (req.headers.authorization !== "Bearer test-token") return void res.writeHead(401).end();
      const sid = req.headers["mcp-session-id"];
      let transport = typeof sid === "string" ? sessions.get(sid) : undefined;
      if (!transport) {
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created),
        });
        transport = created;
        await mcpServer().connect(created);
      }
      await transport.handleRequest(req, res);
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
    process.env.JAI_TEST_MCP_TOKEN = "Bearer test-token";
  });
  afterAll(async () => {
    http?.closeAllConnections();
    await new Promise((resolve) => http?.close(resolve));
  });

  const httpServer = (): McpServerConfig => ({
    name: "web",
    transport: { type: "http", url, headersFromEnv: { Authorization: "JAI_TEST_MCP_TOKEN" } },
    allow: ["mix", "fail", "wait"],
  });

  it("maps text, image and embedded resources; isError stays a result; headers come from the environment", async () => {
    const { worker, handle } = await runWith(
      [httpServer()],
      [[fauxToolCall("web__mix", { word: "there" }), fauxToolCall("web__fail", {}), fauxToolCall("web__secret", {})]],
    );
    const result = await worker.runUntil(handle.result());
    const [mix, fail, secret] = toolResultsOf(result.messages);
    expect(mix.isError).toBe(false);
    expect(mix.content).toEqual([
      { type: "text", text: "hello there" },
      { type: "image", data: Buffer.from("png").toString("base64"), mimeType: "image/png" },
      { type: "text", text: "[resource memo://one (text/plain)]\nresource body" },
    ]);
    expect(mix.details).toEqual({ structuredContent: { word: "there" } });
    expect(fail.isError).toBe(true);
    expect(textOf(fail)).toBe("it broke on purpose");
    expect(secret.isError).toBe(true);
    expect(seenAuth.every((a) => a === "Bearer test-token")).toBe(true);
  });

  it("validates arguments against the server's schema before calling it", async () => {
    const { worker, handle } = await runWith([httpServer()], [[fauxToolCall("web__mix", { wrong: 42 })]]);
    const result = await worker.runUntil(handle.result());
    const [mix] = toolResultsOf(result.messages);
    expect(mix.isError).toBe(true);
    expect(textOf(mix)).toMatch(/Validation failed[^]*word/);
  });

  it("cancelling the run forwards an MCP cancellation to the server", async () => {
    const { worker, handle } = await runWith([httpServer()], [[fauxToolCall("web__wait", {})]]);
    const result = await worker.runUntil(async () => {
      await within(called.promise, 30_000, "the call to reach the server");
      await handle.cancel();
      await within(cancelled.promise, 30_000, "the server to see the cancellation");
      return handle.result();
    });
    expect(result.stopReason).toBe("aborted");
  });

  it("requiresApproval on a server's tools waits for a person like a native tool", async () => {
    const started = deferred();
    const { worker, handle } = await runWith(
      [{ ...httpServer(), requiresApproval: ["mix"] }],
      [[fauxToolCall("web__mix", { word: "ok" }, { id: "c1" })]],
      (e) => {
        if (e.type === "tool_execution_start") started.resolve();
      },
    );
    const result = await worker.runUntil(async () => {
      await within(started.promise, 30_000, "the call to start");
      expect((await handle.state()).pendingApprovals.map((p) => p.toolCallId)).toEqual(["c1"]);
      await handle.approve("c1");
      return handle.result();
    });
    expect(textOf(toolResultsOf(result.messages)[0])).toContain("hello ok");
  });
});
