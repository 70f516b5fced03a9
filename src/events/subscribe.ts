/**
 * `handle.events()`: a run's AgentEvents in any process with a Temporal
 * client. Live events come over SSE from the event tap of the worker process
 * serving the run (found from the worker identity its history records, or
 * given), token deltas included; a run no tap holds is rebuilt from its
 * transcript. Every event comes with a cursor to resume after it.
 */
import type { Client } from "@temporalio/client";
import type { AssistantMessage } from "@jai/ai";
import type { AgentEvent, AgentMessage } from "../types.js";
import { transcriptEvents } from "./from-history.js";
import { partialRebuilder, type WireEvent } from "./wire.js";

/** An event of a run and where it is in the run's event stream. */
export interface RunEvent {
  /** Pass as `from` to get the events after this one. */
  cursor: string;
  event: AgentEvent;
}

export interface RunEventsOptions {
  /** A cursor from an earlier RunEvent: start after it. Default: from the beginning. */
  from?: string;
  /** Base URL of the run server holding the run's events; default JAI_EVENTS_URL, else the one the serving worker announces in its identity. */
  url?: string;
  /** Bearer token for the run server; default JAI_HTTP_TOKEN. */
  token?: string;
  /** Stops the stream. */
  signal?: AbortSignal;
}

/** What a worker process serving run events appends to its Temporal identity, so clients can find its tap. */
export const EVENTS_IDENTITY_MARK = " events=";

/** The events URL the newest worker of the run announced in its identity, if any. */
export async function discoverEventsUrl(client: Client, workflowId: string): Promise<string | undefined> {
  const response = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 200,
  });
  for (const event of response.history?.events ?? []) {
    const identity =
      event.workflowTaskStartedEventAttributes?.identity ?? event.activityTaskStartedEventAttributes?.identity;
    const at = identity?.indexOf(EVENTS_IDENTITY_MARK) ?? -1;
    if (identity && at >= 0) return identity.slice(at + EVENTS_IDENTITY_MARK.length).split(/\s/)[0];
  }
  return undefined;
}

interface SseFrame {
  id?: string;
  event: string;
  data: string;
}

async function* sseFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const frame: SseFrame = { event: "message", data: "" };
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "id") frame.id = value;
        else if (field === "event") frame.event = value;
        else if (field === "data") frame.data += (frame.data ? "\n" : "") + value;
      }
      if (frame.data || frame.id) yield frame;
    }
  }
}

/** Follows a run over SSE, reconnecting from the last cursor when the connection drops. */
async function* overSse(url: string, workflowId: string, options: RunEventsOptions): AsyncGenerator<RunEvent> {
  let cursor = options.from;
  let rebuild = partialRebuilder();
  let failures = 0;
  const token = options.token ?? process.env.JAI_HTTP_TOKEN;
  for (;;) {
    let response: Response;
    try {
      response = await fetch(`${url.replace(/\/$/, "")}/runs/${encodeURIComponent(workflowId)}/events`, {
        headers: {
          accept: "text/event-stream",
          ...(cursor ? { "last-event-id": cursor } : {}),
          ...(token ? { authorization: `Bearer ${token}` } : {}),
        },
        signal: options.signal,
      });
    } catch (err) {
      if (options.signal?.aborted || ++failures > 20) throw err;
      await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** failures))); // reconnect backoff
      continue;
    }
    if (!response.ok || !response.body)
      throw new Error(`events of ${workflowId}: HTTP ${response.status} ${await response.text().catch(() => "")}`);
    try {
      for await (const frame of sseFrames(response.body)) {
        failures = 0;
        if (frame.event === "end") return;
        if (frame.event === "prime") {
          const partial = JSON.parse(frame.data) as AssistantMessage;
          rebuild = partialRebuilder();
          rebuild({ type: "message_start", message: partial });
          continue;
        }
        if (frame.event !== "agent" || !frame.id) continue;
        cursor = frame.id;
        yield { cursor, event: rebuild(JSON.parse(frame.data) as WireEvent) };
      }
    } catch (err) {
      if (options.signal?.aborted) return;
      if (++failures > 20) throw err;
    }
    // The stream ended without "end": the server went away mid-run; resume from the cursor.
    if (options.signal?.aborted) return;
    await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** failures)));
  }
}

/** How the events of a run no tap holds are read: its transcript and whether it closed. */
export interface RunReader {
  transcript(): Promise<AgentMessage[]>;
  closed(): Promise<boolean>;
}

/** A run no tap holds: its transcript-derived events, followed until it closes. */
async function* fromTranscript(reader: RunReader, options: RunEventsOptions): AsyncGenerator<RunEvent> {
  const m = /^h(\d+)$/.exec(options.from ?? "");
  let sent = m ? Number(m[1]) + 1 : 0;
  for (;;) {
    const ended = await reader.closed();
    const events = transcriptEvents(await reader.transcript(), ended);
    for (; sent < events.length; sent++) yield { cursor: `h${sent}`, event: events[sent] };
    if (ended || options.signal?.aborted) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function* runEvents(
  client: Client,
  workflowId: string,
  reader: RunReader,
  options: RunEventsOptions = {},
): AsyncGenerator<RunEvent> {
  let url = options.url ?? process.env.JAI_EVENTS_URL;
  // A run just started has no worker identity in its history yet: give its first workflow task a moment.
  for (let i = 0; i < 50 && !url && !options.from?.startsWith("h"); i++) {
    url = await discoverEventsUrl(client, workflowId);
    if (url || (await reader.closed())) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  yield* url ? overSse(url, workflowId, options) : fromTranscript(reader, options);
}
