/**
 * `handle.events()`: a run's AgentEvents in any process with a Temporal
 * client. Live events come over SSE from the event tap of the worker process
 * serving the run (found from the worker identity its history records, or
 * given), token deltas included; a run no tap holds is rebuilt from its
 * transcript. Every event comes with a cursor to resume after it and its
 * identity; each is given once (a repeat of one given already, by its id, is
 * dropped: docs/streaming.md, "Repeats").
 *
 * History is not trusted to direct the token (docs/design.md §3): the bearer token
 * goes to a URL the caller configured (`url`, JAI_EVENTS_URL) or one found in
 * history whose host the caller trusts (`trustedHosts`,
 * JAI_EVENTS_TRUSTED_HOSTS). Any other discovered URL is read without it, and
 * when its server asks for one the events are rebuilt from history instead.
 */
import type { Client } from "@temporalio/client";
import type { AssistantMessage } from "@jai/ai";
import type { AgentEvent, AgentMessage } from "../../shared/contracts.js";
import { transcriptEvents } from "./from-history.js";
import { EventDeduper } from "../../shared/event-ids.js";
import { runtimeToken } from "../../node/runtime-files.js";
import { partialRebuilder, unframe, type WireFrame } from "../../shared/event-wire.js";
import { httpUrl } from "../../shared/urls.js";

/** An event of a run and where it is in the run's event stream. */
export interface RunEvent {
  /** Pass as `from` to get the events after this one. */
  cursor: string;
  event: AgentEvent;
  /**
   * The event's identity: its `eventId` (what `onEvent` got as `ref.eventId`) for an event from a worker's tap;
   * for one rebuilt from the transcript, its position there (`h<n>`, the same as its cursor). The stream never
   * gives two events with one id.
   */
  id: string;
}

export interface RunEventsOptions {
  /** A cursor from an earlier RunEvent: start after it. Default: from the beginning. */
  from?: string;
  /** Base URL of the run server holding the run's events; default JAI_EVENTS_URL, else the one the serving worker announces in its identity. */
  url?: string;
  /** Bearer token for the run server; default JAI_HTTP_TOKEN. Sent to `url`/JAI_EVENTS_URL, and to a URL found in history only when its host is in `trustedHosts`. */
  token?: string;
  /**
   * Hosts (`host` or `host:port`) whose run servers may get the token when
   * their URL is found in the run's history (a worker identity); default
   * JAI_EVENTS_TRUSTED_HOSTS (comma-separated), else none. A URL from history
   * on any other host is read without a token; if it answers 401/403, the
   * events are rebuilt from the run's history.
   */
  trustedHosts?: string[];
  /** Stops the stream. */
  signal?: AbortSignal;
}

/** What a worker process serving run events appends to its Temporal identity, so clients can find its tap. */
export const EVENTS_IDENTITY_MARK = " events=";

/** Largest SSE frame the reader holds (4 MiB): a bigger one aborts that stream and the events are rebuilt from history. */
export const MAX_SSE_FRAME_BYTES = 4 * 1024 * 1024;

/** An SSE frame grew past MAX_SSE_FRAME_BYTES without ending. */
export class SseFrameTooLargeError extends Error {
  constructor(url: string, bytes: number) {
    super(
      `events stream from ${url}: a frame passed ${bytes} bytes without ending (limit ${MAX_SSE_FRAME_BYTES}); stream aborted`,
    );
    this.name = "SseFrameTooLargeError";
  }
}

/** The hosts a discovered events URL may be on to get the token: `trustedHosts`, else JAI_EVENTS_TRUSTED_HOSTS. */
function trustedHostsOf(options: Pick<RunEventsOptions, "trustedHosts">): string[] {
  const list = options.trustedHosts ?? (process.env.JAI_EVENTS_TRUSTED_HOSTS ?? "").split(",");
  return list.map((h) => h.trim().toLowerCase()).filter(Boolean);
}

/**
 * Whether a run server URL found in history may get the token: its host
 * (`host`, any port) or host and port (`host:port`) is trusted.
 */
export function isTrustedEventsUrl(url: string, options: Pick<RunEventsOptions, "trustedHosts"> = {}): boolean {
  const parsed = httpUrl(url);
  if (!parsed) return false;
  const trusted = trustedHostsOf(options);
  return trusted.includes(parsed.host.toLowerCase()) || trusted.includes(parsed.hostname.toLowerCase());
}

/** The events URL the newest worker of the run announced in its identity, if any (http or https only). History wrote it: see isTrustedEventsUrl before sending it a token. */
export async function discoverEventsUrl(client: Client, workflowId: string): Promise<string | undefined> {
  return (await discoverEvents(client, workflowId)).url;
}

/** What history says of the run's events server: its URL, and whether any worker has taken a task of the run yet. */
async function discoverEvents(client: Client, workflowId: string): Promise<{ url?: string; workerSeen: boolean }> {
  const response = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 200,
  });
  let workerSeen = false;
  for (const event of response.history?.events ?? []) {
    const identity =
      event.workflowTaskStartedEventAttributes?.identity ?? event.activityTaskStartedEventAttributes?.identity;
    if (identity) workerSeen = true;
    const at = identity?.indexOf(EVENTS_IDENTITY_MARK) ?? -1;
    if (identity && at >= 0) {
      const url = identity.slice(at + EVENTS_IDENTITY_MARK.length).split(/\s/)[0];
      return { url: /^https?:\/\/[^/?#\s]+/i.test(url) ? url : undefined, workerSeen };
    }
  }
  return { workerSeen };
}

interface SseFrame {
  id?: string;
  event: string;
  data: string;
}

async function* sseFrames(body: ReadableStream<Uint8Array>, url: string): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = "";
  // Where the search for the next blank line resumes: a long frame is not rescanned from its start on every chunk.
  let scanned = 0;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n", scanned)) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      scanned = 0;
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
    scanned = Math.max(0, buffer.length - 1);
    // A UTF-16 unit is at most 3 UTF-8 bytes: only a long buffer is measured.
    if (buffer.length * 3 > MAX_SSE_FRAME_BYTES) {
      const bytes = Buffer.byteLength(buffer);
      if (bytes > MAX_SSE_FRAME_BYTES) throw new SseFrameTooLargeError(url, bytes);
    }
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
    for (; sent < events.length; sent++) yield { cursor: `h${sent}`, event: events[sent], id: `h${sent}` };
    if (ended || options.signal?.aborted) return;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** What is not in a transcript-derived sequence: token deltas and tool progress. */
const LIVE_ONLY = new Set<AgentEvent["type"]>(["message_update", "tool_execution_update"]);

/**
 * Follows a run over SSE, reconnecting from the last cursor when the
 * connection drops. `withToken`: the URL was configured or its host trusted.
 * When the stream cannot be used (a discovered server asking for a token, a
 * frame over the cap), it goes on from the transcript: after the events it
 * already gave (counted without deltas and tool progress), or from the start
 * when it was resumed from a tap cursor it cannot place there.
 */
async function* overSse(
  url: string,
  workflowId: string,
  reader: RunReader,
  options: RunEventsOptions,
  auth: { withToken: boolean; token?: string },
): AsyncGenerator<RunEvent> {
  const { withToken, token } = auth;
  let cursor = options.from;
  let rebuild = partialRebuilder();
  let failures = 0;
  let given = 0;
  /** Repeats (an event with the id of one given already: a retried workflow task emitted it again) are dropped. */
  const seen = new EventDeduper();
  /** After a restart: transcript-derived events below this index were given already. */
  let skip = 0;
  const fallback = (reason?: string) => {
    if (reason) process.emitWarning(`events of ${workflowId}: ${reason}; following the run from its history instead`);
    const from = /^h\d+$/.test(cursor ?? "")
      ? cursor
      : given > 0 && options.from === undefined
        ? `h${given - 1}`
        : undefined;
    return fromTranscript(reader, { ...options, from });
  };
  for (;;) {
    // One controller per connection, so a stream given up on is closed, not left for the server to fill.
    const connection = new AbortController();
    const stop = () => connection.abort();
    options.signal?.addEventListener("abort", stop, { once: true });
    try {
      let response: Response;
      try {
        response = await fetch(`${url.replace(/\/$/, "")}/runs/${encodeURIComponent(workflowId)}/events`, {
          headers: {
            accept: "text/event-stream",
            ...(cursor ? { "last-event-id": cursor } : {}),
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          signal: connection.signal,
        });
      } catch (err) {
        if (options.signal?.aborted) throw err;
        // Nobody listens there: the worker that served the run stopped. A closed run loses only its token deltas
        // by that (the transcript has every message), so it is read from history at once, not retried for minutes.
        if (await reader.closed()) {
          yield* fallback();
          return;
        }
        if (++failures > 20)
          throw new Error(
            `events of ${workflowId}: the run server ${url} does not answer (${(err as Error).message}) and the run is still open: is its worker up? (\`jai-agent show ${workflowId}\` reads it from history)`,
            { cause: err },
          );
        await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** failures))); // reconnect backoff
        continue;
      }
      if (!withToken && (response.status === 401 || response.status === 403)) {
        await response.body?.cancel().catch(() => {});
        yield* fallback(
          `the run server ${new URL(url).host} named in the run's history asks for a token, which is sent only to configured URLs (JAI_EVENTS_URL) and trusted hosts (JAI_EVENTS_TRUSTED_HOSTS)`,
        );
        return;
      }
      if (!response.ok || !response.body)
        throw new Error(`events of ${workflowId}: HTTP ${response.status} ${await response.text().catch(() => "")}`);
      try {
        for await (const frame of sseFrames(response.body, url)) {
          failures = 0;
          if (frame.event === "end") return;
          if (frame.event === "prime") {
            const partial = JSON.parse(frame.data) as AssistantMessage;
            rebuild = partialRebuilder();
            rebuild({ type: "message_start", message: partial });
            continue;
          }
          if (frame.event === "restart") {
            // The server lost events this reader had not read and starts over from the run's first one (h0).
            // Begun at the start, the reader skips the `given` it gave (the same sequence, deltas aside); resumed
            // from a tap cursor, it cannot place them and gives them again, as the fallback does.
            skip = options.from === undefined ? given : 0;
            rebuild = partialRebuilder();
            continue;
          }
          if (frame.event !== "agent" || !frame.id) continue;
          cursor = frame.id;
          const h = /^h(\d+)$/.exec(frame.id);
          if (h && Number(h[1]) < skip) continue;
          const { event: wire, eventId } = unframe(JSON.parse(frame.data) as WireFrame);
          if (seen.repeat(eventId)) continue;
          const event = rebuild(wire);
          if (!LIVE_ONLY.has(event.type)) given++;
          yield { cursor, event, id: eventId ?? cursor };
        }
      } catch (err) {
        if (options.signal?.aborted) return;
        if (err instanceof SseFrameTooLargeError) {
          connection.abort();
          yield* fallback(err.message);
          return;
        }
        if (++failures > 20) throw err;
      }
    } finally {
      options.signal?.removeEventListener("abort", stop);
      connection.abort();
    }
    // The stream ended without "end": the server went away mid-run; resume from the cursor.
    if (options.signal?.aborted) return;
    await new Promise((r) => setTimeout(r, Math.min(5000, 100 * 2 ** failures)));
  }
}

export async function* runEvents(
  client: Client,
  workflowId: string,
  reader: RunReader,
  options: RunEventsOptions = {},
): AsyncGenerator<RunEvent> {
  // An empty setting is no setting: it must not make a URL from history count as configured.
  const configured = options.url || process.env.JAI_EVENTS_URL || undefined;
  let url = configured;
  // A run just started has no worker identity in its history yet: give its first workflow task a moment. Once a
  // worker that announces no events server has taken a task, there is nothing to wait for.
  for (let i = 0; i < 50 && !url && !options.from?.startsWith("h"); i++) {
    const found = await discoverEvents(client, workflowId);
    url = found.url;
    if (url || found.workerSeen || (await reader.closed())) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  // A URL from history gets the token only on a host the caller trusts, or when this user's own run server there
  // left its token in a runtime file only this user can read (node/runtime-files.ts).
  const trusted = configured !== undefined || (url !== undefined && isTrustedEventsUrl(url, options));
  const own = !trusted && url !== undefined ? runtimeToken(url) : undefined;
  const auth = trusted
    ? { withToken: true, token: options.token ?? process.env.JAI_HTTP_TOKEN }
    : { withToken: own !== undefined, token: own };
  yield* url ? overSse(url, workflowId, reader, options, auth) : fromTranscript(reader, options);
}
