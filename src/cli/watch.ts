/**
 * `npm run watch -- <workflowId> [--from cursor]` (`jai-agent watch`): prints a
 * run as it happens from any process, attaching to a running run or
 * replaying a finished one: streaming text, tool calls, results, approvals
 * waiting with the command to approve them, and the final usage.
 */
import { parseArgs } from "node:util";
import { Client, Connection } from "@temporalio/client";
import { getAgentRun } from "../client.js";
import { eventPrinter } from "../events/render.js";
import { discoverEventsUrl } from "../events/subscribe.js";
import { runningServer } from "./server-state.js";

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  options: { address: { type: "string" }, from: { type: "string" }, url: { type: "string" } },
  allowPositionals: true,
});
const workflowId = positionals[0];
if (!workflowId) {
  console.error("usage: npm run watch -- <workflowId> [--from cursor] [--address host:port] [--url run-server]");
  process.exit(2);
}
const address = values.address ?? process.env.TEMPORAL_ADDRESS ?? (await runningServer())?.address ?? "localhost:7233";
const connection = await Connection.connect({ address });
const client = new Client({ connection });
const handle = getAgentRun(client, workflowId);
const url =
  values.url ?? process.env.JAI_EVENTS_URL ?? (await discoverEventsUrl(client, workflowId).catch(() => undefined));
const announced = new Set<string>();
const lookForApprovals = async () => {
  const state = await handle.state().catch(() => undefined);
  for (const a of state?.pendingApprovals ?? []) {
    if (announced.has(a.toolCallId)) continue;
    announced.add(a.toolCallId);
    const body = JSON.stringify({ toolCallId: a.toolCallId });
    console.log(`  ⏸ ${a.toolName} waits for approval; approve with:`);
    console.log(
      url
        ? `      curl -X POST ${url}/runs/${workflowId}/approve -H 'content-type: application/json' -d '${body}'`
        : `      await getAgentRun(client, "${workflowId}").approve("${a.toolCallId}")`,
    );
  }
};
// Approvals are state, not events: while a tool call runs, look for calls waiting for a person.
const running = new Set<string>();
// The lookup in flight, awaited before the connection closes (a call started on a closed channel throws uncaught).
let looking: Promise<void> = Promise.resolve();
const poll = setInterval(() => {
  if (running.size > 0) looking = looking.then(lookForApprovals);
}, 300);
const print = eventPrinter();
let cursor: string | undefined;
try {
  for await (const event of handle.events({ from: values.from, url })) {
    cursor = event.cursor;
    if (event.event.type === "tool_execution_start") running.add(event.event.toolCallId);
    if (event.event.type === "tool_execution_end") running.delete(event.event.toolCallId);
    print(event.event);
  }
} finally {
  clearInterval(poll);
  await looking;
}
const state = await handle.state().catch(() => undefined);
if (state)
  console.log(
    `\n${state.status} after ${state.turn} turn(s), ${state.usage.totalTokens} tokens, $${state.usage.cost.total.toFixed(4)}.${cursor ? ` (last cursor ${cursor})` : ""}`,
  );
await connection.close();
