/** Shared test plumbing: a client and connection to the jest run's dev server, faux models, collected events. */
import { randomUUID } from "node:crypto";
import { Client, Connection } from "@temporalio/client";
import { NativeConnection } from "@temporalio/worker";
import { registerFauxProvider, type FauxResponseStep } from "@jai/ai";
import { bundleAgentWorkflows, createAgentWorker, type AgentWorkerOptions } from "../src/worker.js";
import type { AgentEvent, AgentTool } from "../src/types.js";

export interface TestEnv {
  client: Client;
  connection: NativeConnection;
  bundle: { code: string };
  close(): Promise<void>;
}

/** Call once per test file (beforeAll): connects and bundles the workflows once. */
export async function openTestEnv(): Promise<TestEnv> {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error("TEMPORAL_ADDRESS is not set: run the tests through jest's globalSetup");
  const clientConnection = await Connection.connect({ address });
  const connection = await NativeConnection.connect({ address });
  const bundle = await bundleAgentWorkflows();
  return {
    client: new Client({ connection: clientConnection }),
    connection,
    bundle,
    async close() {
      await connection.close();
      await clientConnection.close();
    },
  };
}

export const uniqueId = (prefix: string) => `${prefix}-${randomUUID()}`;

/** A faux model of its own for one test: scripted responses, no shared queue between tests. */
export function fauxModel(responses: FauxResponseStep[], options: { tokensPerSecond?: number } = {}) {
  const faux = registerFauxProvider({ tokensPerSecond: options.tokensPerSecond });
  faux.setResponses(responses);
  return faux;
}

/** A worker for one test on its own task queue, collecting every event. */
export async function testWorker(env: TestEnv, tools: AgentTool<any>[], extra: Partial<AgentWorkerOptions> = {}) {
  const events: AgentEvent[] = [];
  const taskQueue = uniqueId("tq");
  const worker = await createAgentWorker({
    connection: env.connection,
    taskQueue,
    tools,
    workflowBundle: env.bundle,
    onEvent: (event) => void events.push(event),
    ...extra,
  });
  return { worker, taskQueue, events };
}

/** Event types with message roles, for compact order assertions. */
export function eventTrace(events: AgentEvent[]): string[] {
  return events.map((e) => ("message" in e && e.type.startsWith("message") ? `${e.type}:${e.message.role}` : e.type));
}
