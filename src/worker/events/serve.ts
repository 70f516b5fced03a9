/** Wiring for a worker process that serves its runs' events: the tap, the run server, and the identity announcing it. */
import { hostname } from "node:os";
import type { Client } from "@temporalio/client";
import { startRunServer, type RunServer, type RunServerOptions } from "../../http/server.js";
import type { AgentEventsServeOptions } from "../serving.js";
import type { AgentEventSink } from "../../shared/contracts.js";
import { EVENTS_IDENTITY_MARK } from "../../client/events/subscribe.js";
import { EventTap, type EventTapOptions } from "./tap.js";
import { announceRunServer } from "../../node/runtime-files.js";

export interface RunEventsService {
  tap: EventTap;
  server: RunServer;
  /** Pass as createAgentWorker's onEvent: logs to the tap, then calls the given sink. */
  onEvent: AgentEventSink;
  /** Pass as the worker's identity: Temporal records it in history, which is how clients find this server. */
  identity: string;
}

/** Starts the run server with a fresh tap; `onEvent` is the worker's own sink, if any. */
export async function startRunEventsService(
  options: Omit<RunServerOptions, "tap"> & { client: Client; onEvent?: AgentEventSink; tap?: EventTapOptions },
): Promise<RunEventsService> {
  const tap = new EventTap(options.tap);
  const server = await startRunServer({ ...options, tap });
  // Clients of the same user on this host take the token from a file only that user reads (node/runtime-files.ts).
  if (server.token) {
    const remove = announceRunServer(server.url, server.token);
    const close = server.close;
    (server as { close: () => Promise<void> }).close = () => {
      remove();
      return close();
    };
  }
  return {
    tap,
    server,
    onEvent: tap.sink(options.onEvent),
    identity: `${process.pid}@${hostname()}${EVENTS_IDENTITY_MARK}${server.url}`,
  };
}

/** Where a worker's run server is and how to reach it: `AgentWorker.events`. */
export type RunEventsEndpoint = Pick<RunServer, "url" | "token" | "tokenMinted" | "consoleUrl">;

/**
 * The events service of a worker the agent builds (`createAgentWorker`, `AgentPlugin`), as its `events` option
 * says: undefined when off (`false`), or when the caller already announces a run server of its own in the
 * identity (it wired `startRunEventsService` itself). Otherwise on loopback at a free port, with `identity` (the
 * worker's own, default Temporal's `<pid>@<host>`) followed by the mark clients look for.
 */
export async function serveWorkerEvents(
  option: boolean | AgentEventsServeOptions | undefined,
  worker: {
    client: Client;
    taskQueue: string;
    namespace: string;
    identity?: string;
    onEvent?: AgentEventSink;
    /** The models it serves by name, offered by the console's "New run" when no agents are configured. */
    models?: string[];
  },
): Promise<RunEventsService | undefined> {
  if (option === false || worker.identity?.includes(EVENTS_IDENTITY_MARK)) return undefined;
  const { tap, ...server } = option === true || option === undefined ? {} : option;
  const service = await startRunEventsService({
    port: 0,
    ...(worker.models ? { models: worker.models } : {}),
    ...server,
    client: worker.client,
    taskQueue: worker.taskQueue,
    namespace: worker.namespace,
    onEvent: worker.onEvent,
    ...(tap ? { tap } : {}),
  });
  // A worker that is created but never run must not keep its process alive for the sake of this server.
  service.server.app.server.unref();
  if (worker.identity !== undefined)
    service.identity = `${worker.identity}${EVENTS_IDENTITY_MARK}${service.server.url}`;
  return service;
}
