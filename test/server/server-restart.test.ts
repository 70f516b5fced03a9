/**
 * The Temporal server stops in the middle of a run and comes back on the same
 * SQLite file and port: the worker reconnects on its own and the run completes
 * with the right transcript.
 */
import { afterAll, describe, expect, it } from "@jest/globals";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import { existsSync } from "node:fs";
import path from "node:path";
import { Client } from "@temporalio/client";
import { NativeConnection } from "@temporalio/worker";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { freePort, startDevServer, type DevServer } from "../../src/node/dev-server.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { deferred, fauxModel, textOf, uniqueId, within } from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";
import { connectTestClient } from "../support/client-connection.js";

let server: DevServer | undefined;
let dir: string | undefined;
afterAll(async () => {
  await server?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("server restart", () => {
  it("completes a run whose server was stopped and started again mid-run", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "jai-restart-"));
    const dbFile = path.join(dir, "temporal.db");
    const port = await freePort();
    server = await startDevServer({ dbFile, port, uiPort: false });

    const entered = deferred();
    const release = deferred();
    const gate: AgentTool = {
      name: "gate",
      description: "waits for the test",
      parameters: Type.Object({}),
      activity: { heartbeatTimeout: "60s" },
      async execute() {
        entered.resolve();
        await within(release.promise, 60000, "release");
        return { content: [{ type: "text", text: "gate passed" }] };
      },
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("gate", {}, { id: "g1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("all done"),
    ]);
    const connection = await NativeConnection.connect({ address: server.address });
    const clientConnection = await connectTestClient(server.address);
    const client = new Client({ connection: clientConnection });
    const taskQueue = uniqueId("restart");
    const worker = await createAgentWorker({
      connection,
      taskQueue,
      tools: [gate],
      workflowBundle: await sharedBundle(),
    });
    const handle = await startAgentRun(client, {
      taskQueue,
      workflowId: uniqueId("restart"),
      model: faux.getModel(),
      prompt: "pass the gate",
    });

    const result = await worker.runUntil(async () => {
      await within(entered.promise, 30000, "the tool to start");
      await server!.stop();
      // Started again with pragmas (what the test run's own server uses): the kept file goes on in WAL mode.
      expect(existsSync(`${dbFile}-wal`)).toBe(false);
      server = await startDevServer({
        dbFile,
        port,
        uiPort: false,
        sqlitePragmas: { journal_mode: "wal", synchronous: "off" },
      });
      release.resolve();
      return handle.result();
    });
    await connection.close();
    await clientConnection.close();

    expect(result.stopReason).toBe("stop");
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    expect(textOf(result.messages[2])).toBe("gate passed");
    expect(textOf(result.messages[3])).toBe("all done");
    expect(existsSync(`${dbFile}-wal`)).toBe(true);
  }, 120000);
});
