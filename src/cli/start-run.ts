/**
 * The run `npm start` prints (src/cli/start.ts reads the arguments): a worker of this process on a queue of its own,
 * the server (--address, TEMPORAL_ADDRESS, `npm run temporal`'s, else an embedded one), the run, its events.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";
import { Client, Connection } from "@temporalio/client";
import { NativeConnection, Runtime } from "@temporalio/worker";
import { getEnvApiKey, type Api, type Model } from "@jai/ai";
import { startAgentRun } from "../client/client.js";
import { dataConverterFromEnv } from "../node/codec/config.js";
import { loadOptional, MCP_PACKAGES, MissingPackageError } from "../node/optional-package.js";
import type { TourMcpServer } from "../demo/tour-mcp.js";
import { DEMO_LABEL, registerDemoModel } from "../demo/offline-model.js";
import {
  createTourTools,
  registerTourModel,
  TOUR_LABEL,
  TOUR_PROMPT,
  TOUR_SYSTEM_PROMPT,
  tourGuide,
} from "../demo/tour.js";
import { portInUse, startDevServer, type DevServer } from "../node/dev-server.js";
import { createFileTools } from "../worker/tools/fs-tools.js";
import type { AgentBudget, ModelRef } from "../shared/contracts.js";
import { eventPrinter } from "../client/events/render.js";
import { startRunEventsService } from "../worker/events/serve.js";
import { AgentRuntimeLogger, agentLogLevel, createAgentWorker } from "../worker/worker.js";
import { dbFile, runningServer } from "../node/server-state.js";
import { probeServer } from "./connect.js";

function chooseModel(): { model: ModelRef; models: Model<Api>[]; note: string } {
  const wanted = process.env.JAI_MODEL;
  if (wanted) {
    const provider = wanted.split("/")[0];
    if (getEnvApiKey(provider)) return { model: wanted, models: [], note: `model ${wanted}` };
    console.log(
      `JAI_MODEL=${wanted} is set but no API key for "${provider}" is in the environment; using the ${DEMO_LABEL}.`,
    );
  }
  const demo = registerDemoModel();
  return { model: demo, models: [demo], note: DEMO_LABEL };
}

export interface StartRunOptions {
  address?: string;
  tour: boolean;
  tenant?: string;
  budget?: AgentBudget;
  /** Empty with `tour`: the tour's own. */
  prompt: string;
}

export async function startRun(options: StartRunOptions): Promise<void> {
  const tour = options.tour;
  const prompt = options.prompt || (tour ? TOUR_PROMPT : "");
  // Ctrl-C is ours (cancel the run), not the Temporal runtime's (which would stop the worker under the run).
  Runtime.install({ logger: new AgentRuntimeLogger(agentLogLevel()), shutdownSignals: [] });
  // The tour is scripted step by step: it always runs the tour model, whatever JAI_MODEL says.
  const tourModel = tour ? registerTourModel() : undefined;
  const { model, models, note } = tourModel
    ? { model: tourModel, models: [tourModel], note: TOUR_LABEL }
    : chooseModel();

  let embedded: DevServer | undefined;
  const wanted = options.address ?? process.env.TEMPORAL_ADDRESS;
  let server = wanted ? { address: wanted, uiUrl: undefined as string | undefined } : await runningServer();
  if (!server) {
    console.log("No `npm run temporal` server is up: starting an embedded dev server on .jai/temporal.db ...");
    const uiPort = (await portInUse(8233)) ? undefined : 8233;
    embedded = await startDevServer({ dbFile: dbFile(), uiPort, log: (line) => console.log(line) });
    server = { address: embedded.address, uiUrl: embedded.uiUrl };
  }

  // A server named but not there: one line that says so, at once.
  if (!embedded) await probeServer(server.address);
  const connection = await NativeConnection.connect({ address: server.address });
  const clientConnection = await Connection.connect({ address: server.address });
  // JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE: the run's payloads are encrypted before they reach Temporal.
  const dataConverter = dataConverterFromEnv();
  const client = new Client({ connection: clientConnection, dataConverter });
  // A queue of this process alone: no other process's worker picks this run up, and this worker serves no other run.
  const taskQueue = `jai-start-${randomUUID().slice(0, 8)}`;
  // What this process prints is what anyone can watch: its worker serves the run's events (loopback, any free port)
  // and this process follows them through handle.events() like `npm run watch` does.
  const events = await startRunEventsService({ client, port: 0, taskQueue, temporalUiUrl: server.uiUrl });
  const workspace = process.env.JAI_WORKSPACE ?? process.cwd();
  let mcp: TourMcpServer | undefined;
  if (tour) {
    // The tour's MCP step needs the MCP SDK (an optional package): without it the tour goes on without that step.
    try {
      const { startTourMcpServer } = await loadOptional(
        "the tour's MCP step",
        MCP_PACKAGES,
        () => import("../demo/tour-mcp.js"),
      );
      mcp = await startTourMcpServer();
    } catch (err) {
      if (!(err instanceof MissingPackageError)) throw err;
      console.log(`(${err.message}; the tour skips its MCP step)`);
    }
  }
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    tools: tour
      ? createTourTools({ client, workspace, notePath: path.join(workspace, ".jai", "tour-note.md") })
      : createFileTools(workspace),
    mcpServers: mcp ? [mcp.config] : undefined,
    models,
    onEvent: events.onEvent,
    workerOptions: { identity: events.identity },
    dataConverter,
  });
  const handle = await startAgentRun(client, {
    taskQueue,
    model,
    prompt,
    systemPrompt: tour ? TOUR_SYSTEM_PROMPT : "You are a helpful assistant with read-only access to a workspace.",
    ...(tour ? { session: true } : {}),
    // Who the run is for: its AgentTenant search attribute and fairness key (docs/tenants.md).
    ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
    ...(options.budget ? { budget: options.budget } : {}),
  });
  // Before anything is printed: a Ctrl-C from here on cancels the run, never orphans it.
  let interrupts = 0;
  const interrupt = () => {
    interrupts++;
    if (interrupts === 1) {
      console.log("\nCancelling the run (Ctrl-C again to terminate it at once)...");
      handle.cancel().catch((err) => console.error(`cancel failed: ${String(err)}`));
    } else if (interrupts === 2) {
      console.log("Terminating the run...");
      handle.workflow
        .terminate("npm start was interrupted twice")
        .catch((err) => console.error(`terminate failed: ${String(err)}`));
    }
  };
  process.on("SIGINT", interrupt);
  process.on("SIGTERM", interrupt);
  const { runId } = await handle.workflow.describe();
  const link = server.uiUrl
    ? `${server.uiUrl}/namespaces/default/workflows/${handle.workflowId}/${runId}/history`
    : undefined;
  console.log(`Run ${handle.workflowId} · ${note}${link ? `\nWatch it in the Temporal UI: ${link}` : ""}`);
  // The server's token (minted unless JAI_HTTP_TOKEN is set) rides in the console URL's fragment, never its query.
  const fragment = events.server.tokenMinted ? `#token=${events.server.token}` : "";
  console.log(
    `Follow it from elsewhere: ${fragment ? "JAI_HTTP_TOKEN=<the token below> " : ""}npm run watch -- ${handle.workflowId} --url ${events.server.url}   or the console ${events.server.url}/runs/${handle.workflowId}/console${fragment}`,
  );
  const print = eventPrinter();
  // The CLIs find `npm run temporal`'s server on their own; any other server has to be named.
  const guide = tour
    ? tourGuide({
        workflowId: handle.workflowId,
        consoleUrl: `${events.server.url}/runs/${handle.workflowId}/console${fragment}`,
        address: wanted || embedded ? server.address : undefined,
      })
    : undefined;
  const following = new AbortController();
  const followed = (async () => {
    const stream = handle.events({ url: events.server.url, token: events.server.token, signal: following.signal });
    for await (const { event } of stream) {
      print(event);
      // The tour ends its session once the person's prompt is answered, so the run (and this process) ends.
      if (guide?.(event) === "answered")
        handle.close().catch((err) => console.error(`closing the session failed: ${String(err)}`));
    }
  })();

  // The worker keeps serving until the run is closed, however it closes.
  const outcome = await worker.runUntil(
    handle.result().then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    ),
  );
  // A closed session sends no last event, so its stream would only end at the server's next idle check; the
  // tour has printed everything by then (it closed the session after the answer's agent_end).
  if (tour) following.abort();
  await followed.catch((err) => following.signal.aborted || console.error(`following the run failed: ${String(err)}`));
  await events.server.close();
  await mcp?.close();
  if ("result" in outcome) {
    const { result } = outcome;
    console.log(
      `\nDone: ${result.stopReason} after ${result.turns} turn(s), ${result.usage.totalTokens} tokens, $${result.usage.cost.total.toFixed(4)}.`,
    );
    // A budget that ended the run says which limit and what was spent.
    if (result.stopReason === "budget" && result.errorMessage) console.log(result.errorMessage);
  } else {
    console.log(
      `\nThe run ended without a result: ${outcome.error instanceof Error ? outcome.error.message : String(outcome.error)}`,
    );
  }
  await clientConnection.close();
  await connection.close();
  if (embedded) {
    await embedded.stop();
    console.log(
      `The embedded server has stopped. Run \`npm run temporal\` to browse this run again at\n  http://localhost:8233/namespaces/default/workflows/${handle.workflowId}/${runId}/history`,
    );
  } else {
    console.log(
      link
        ? `Run history: ${link}`
        : `Run history: temporal workflow show --address ${server.address} --workflow-id ${handle.workflowId}`,
    );
  }
  process.exit(0);
}
