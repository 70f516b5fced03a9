/**
 * Run by test/process/run-events.test.ts in a process of its own (not the worker's):
 * follows a run with handle.events() and prints each event as a JSON line.
 * argv: workflowId [from] [stopAfter: "update:N" | "tool_start"].
 */
import { Client, Connection } from "@temporalio/client";
import { getAgentRun } from "../../src/client/client.js";

const [workflowId, from, stopAfter] = process.argv.slice(2);
const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const client = new Client({ connection });
let updates = 0;
for await (const { cursor, event } of getAgentRun(client, workflowId).events({ from: from || undefined })) {
  process.stdout.write(JSON.stringify({ cursor, event }) + "\n");
  if (event.type === "message_update") updates++;
  if (stopAfter?.startsWith("update:") && updates >= Number(stopAfter.slice(7))) break;
  if (stopAfter === "tool_start" && event.type === "tool_execution_start") break;
}
process.stdout.write(JSON.stringify({ done: true }) + "\n");
await connection.close();
process.exit(0);
