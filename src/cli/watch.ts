/**
 * `npm run watch -- <workflowId> [--from cursor]` (`jai-agent watch`): prints a
 * run as it happens from any process, attaching to a running run or
 * replaying a finished one: streaming text, tool calls, results, approvals
 * waiting with the command to approve them, and the final usage.
 *
 * The token (JAI_HTTP_TOKEN) goes to --url / JAI_EVENTS_URL, or to a run
 * server found in the run's history only when its host is listed in
 * JAI_EVENTS_TRUSTED_HOSTS (history does not direct where the token goes).
 */
import { parseArgs } from "node:util";
import { getAgentRun } from "../client.js";
import { eventPrinter, renderOutput } from "../events/render.js";
import { discoverEventsUrl, isTrustedEventsUrl } from "../events/subscribe.js";
import { connectCli } from "./connect.js";

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  options: {
    address: { type: "string" },
    namespace: { type: "string" },
    from: { type: "string" },
    url: { type: "string" },
  },
  allowPositionals: true,
});
const workflowId = positionals[0];
if (!workflowId) {
  console.error(
    "usage: npm run watch -- <workflowId> [--from cursor] [--address host:port] [--namespace ns] [--url run-server]",
  );
  process.exit(2);
}
// The environment the worker honours (address, namespace, TLS / API key, codec keys): encrypted runs read too.
const connection = await connectCli({ address: values.address, namespace: values.namespace });
const client = connection.client;
const handle = getAgentRun(client, workflowId);
// Configured: gets the token. Found in history: handle.events() decides (token only on a trusted host).
const configured = values.url || process.env.JAI_EVENTS_URL || undefined;
const discovered = configured ? undefined : await discoverEventsUrl(client, workflowId).catch(() => undefined);
// The approval hint names a run server only when one is configured or trusted: history's text is not a command to paste.
const url = configured ?? (discovered && isTrustedEventsUrl(discovered) ? discovered : undefined);
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
        : `      jai-agent approve ${workflowId} ${a.toolCallId}    (or: jai-agent deny ${workflowId} ${a.toolCallId} --reason "…")`,
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
  for await (const event of handle.events({ from: values.from, url: configured })) {
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
// A typed run (input `output`): its validated answer, as JSON.
if (state?.status === "completed" || state?.status === "failed") {
  const output = await handle.result().then(
    (r) => r.output,
    () => undefined,
  );
  if (output !== undefined) process.stdout.write(renderOutput(output));
}
await connection.close();
