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
import type { Client } from "@temporalio/client";
import { onlyWorkflowId, parseCli, runCli } from "./program.js";

const USAGE = `usage: npm run watch -- <workflowId> [--from cursor] [--address host:port] [--namespace ns] [--url run-server]
  (jai-agent watch <workflowId> ...): prints a run as it happens, or replays a finished one
  --from      a cursor an earlier watch printed: resume after it
  --url       the run server (else JAI_EVENTS_URL, else the one the run's history names); JAI_HTTP_TOKEN is sent to
              it, and to a server found in history only on a host listed in JAI_EVENTS_TRUSTED_HOSTS
  --address / --namespace   else TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, ..., the \`npm run temporal\` server
Encrypted runs need the workers' JAI_CODEC_KEYS (or JAI_CODEC_KEY_FILE). --debug prints a failure's stack trace.`;

async function main(): Promise<number> {
  const { values, positionals } = parseCli(process.argv.slice(2), {
    address: { type: "string" },
    namespace: { type: "string" },
    from: { type: "string" },
    url: { type: "string" },
  });
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  const workflowId = onlyWorkflowId(positionals);
  // Loaded once the arguments are good: --help and a usage mistake answer without the client.
  const { withCliClient } = await import("./connect.js");
  // The environment the worker honours (address, namespace, TLS / API key, codec keys): encrypted runs read too.
  return withCliClient({ address: str(values.address), namespace: str(values.namespace) }, (client) =>
    follow(client, workflowId, str(values.from), str(values.url)),
  );
}

async function follow(
  client: Client,
  workflowId: string,
  from: string | undefined,
  givenUrl: string | undefined,
): Promise<number> {
  const [{ getAgentRun }, { eventPrinter, renderOutput }, { discoverEventsUrl, isTrustedEventsUrl }] =
    await Promise.all([
      import("../client/client.js"),
      import("../client/events/render.js"),
      import("../client/events/subscribe.js"),
    ]);
  const handle = getAgentRun(client, workflowId);
  // Configured: gets the token. Found in history: handle.events() decides (token only on a trusted host).
  const configured = givenUrl || process.env.JAI_EVENTS_URL || undefined;
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
          ? // The run API needs its token: named by its variable (the shell fills it in), never printed.
            `      curl -X POST ${url}/runs/${workflowId}/approve -H "Authorization: Bearer $JAI_HTTP_TOKEN" -H 'content-type: application/json' -d '${body}'`
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
    for await (const event of handle.events({ from, url: configured })) {
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
  return 0;
}

runCli(USAGE, main);
