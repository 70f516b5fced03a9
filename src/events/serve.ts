/** Wiring for a worker process that serves its runs' events: the tap, the run server, and the identity announcing it. */
import { hostname } from "node:os";
import type { Client } from "@temporalio/client";
import { startRunServer, type RunServer, type RunServerOptions } from "../http/server.js";
import type { AgentEventSink } from "../types.js";
import { EVENTS_IDENTITY_MARK } from "./subscribe.js";
import { EventTap, type EventTapOptions } from "./tap.js";

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
  return {
    tap,
    server,
    onEvent: tap.sink(options.onEvent),
    identity: `${process.pid}@${hostname()}${EVENTS_IDENTITY_MARK}${server.url}`,
  };
}
