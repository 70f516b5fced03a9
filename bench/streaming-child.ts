/**
 * Run by bench/streaming.ts in a process of its own (not the worker's): follows a run with handle.events()
 * and prints, per event, its type and the wall-clock time it arrived here (Date.now(): both processes are
 * on one machine, so the clocks compare). argv: workflowId.
 */
import { Client, Connection } from "@temporalio/client";
import { getAgentRun } from "../src/client/client.js";

const [workflowId] = process.argv.slice(2);
const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS! });
const client = new Client({ connection });
for await (const { event } of getAgentRun(client, workflowId).events()) {
  process.stdout.write(JSON.stringify({ t: Date.now(), type: event.type }) + "\n");
}
process.stdout.write(JSON.stringify({ done: true }) + "\n");
await connection.close();
process.exit(0);
