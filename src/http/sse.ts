/** Server-Sent Events for one run: from the worker's event tap when it holds the run, else rebuilt from the transcript. */
import type { ServerResponse } from "node:http";
import type { EventTap } from "../worker/events/tap.js";
import type { RunReader } from "../client/events/subscribe.js";
import { transcriptEvents } from "../client/events/from-history.js";
import { partialRebuilder, type WireEvent, type WireFrame } from "../shared/event-wire.js";
import type { AssistantMessage } from "@jai/ai";

/** How often an idle stream sends a comment (keeps proxies from closing it) and re-checks whether the run closed. */
const IDLE_MS = 10_000;

/** A cursor: "t<n>" is position n in the tap's log of the run, "h<n>" position n in the transcript-derived sequence. */
export function parseCursor(value: string | undefined): { source: "t" | "h"; seq: number } | undefined {
  const m = /^([th])(\d+)$/.exec(value ?? "");
  return m ? { source: m[1] as "t" | "h", seq: Number(m[2]) } : undefined;
}

async function write(res: ServerResponse, chunk: string): Promise<boolean> {
  if (res.destroyed) return false;
  // A slow reader: wait for its socket to drain (only this reader waits; the tap does not).
  if (!res.write(chunk)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
    });
  }
  return !res.destroyed;
}

/** An `agent` frame: the cursor as its SSE id, the event (with its `eventId`, when it has one) as its data. */
const frame = (cursor: string, event: WireEvent, eventId?: string) =>
  `id: ${cursor}\nevent: agent\ndata: ${JSON.stringify(eventId === undefined ? event : ({ ...event, eventId } satisfies WireFrame))}\n\n`;
/**
 * Sent before the transcript-derived events (`h0` on) when the tap lost events this reader had not read: a `t`
 * cursor it cannot place, or a reader that fell behind while the tap evicted. What follows starts over from the
 * run's first event: a reader clears what it shows (or skips what it already gave) instead of missing the gap.
 */
const RESTART = "event: restart\ndata: {}\n\n";

/** The partial message of the stream in progress at `after`, so a reader resuming mid-stream can rebuild the next deltas. */
function primer(tap: EventTap, workflowId: string, after: number): AssistantMessage | undefined {
  const upTo = tap.since(workflowId, -1).filter((e) => e.seq <= after);
  let start = -1;
  for (let i = upTo.length - 1; i >= 0; i--) {
    const e = upTo[i].event;
    if (e.type === "message_end" || e.type === "turn_end") return undefined;
    if (e.type === "message_start" && e.message.role === "assistant") {
      start = i;
      break;
    }
  }
  if (start < 0) return undefined;
  const rebuild = partialRebuilder();
  let partial: AssistantMessage | undefined;
  for (const { event } of upTo.slice(start)) {
    const out = rebuild(event);
    partial =
      out.type === "message_update"
        ? out.message
        : out.type === "message_start"
          ? (out.message as AssistantMessage)
          : partial;
  }
  return partial;
}

/** Streams the run's events after `from` to `res` until the run closes or the reader goes away. */
export async function streamRunEvents(
  res: ServerResponse,
  run: RunReader,
  tap: EventTap | undefined,
  workflowId: string,
  from: string | undefined,
): Promise<void> {
  const cursor = parseCursor(from);
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
    "x-accel-buffering": "no",
  });
  res.write(": jai-agent run events\n\n");
  // A `t` cursor whose later events the tap evicted cannot resume truthfully there: it starts over on the transcript.
  const resumable = cursor === undefined || (cursor.source === "t" && tap?.complete(workflowId, cursor.seq) === true);
  let restart = cursor?.source === "t" && !resumable;
  const live = tap !== undefined && resumable && (tap.has(workflowId) || !(await run.closed()));
  if (live) {
    let after = cursor ? cursor.seq : -1;
    if (cursor) {
      const partial = primer(tap, workflowId, after);
      if (partial && !(await write(res, `event: prime\ndata: ${JSON.stringify(partial)}\n\n`))) return;
    }
    let ended = false;
    /**
     * Quick looks left after an agent_end: the run completes right after its last event (the worker completes
     * the workflow task once the sinks returned), so the first look usually finds it still running. Looked at
     * again after 0.2, 0.4, 0.8, 1.6 and 3.2 s rather than after IDLE_MS; then a session waiting for its next
     * prompt is looked at every IDLE_MS as before.
     */
    let soon = 0;
    for (;;) {
      const batch = tap.since(workflowId, after);
      // The tap evicted events after this reader's position while it was behind (a slow socket): going on
      // here would skip them silently. Only a reader that holds a position: a new one (-1) is served what the tap
      // holds, as ever (a big run's log is trimmed from its start; the transcript has it all), and a run the tap
      // holds nothing of yet has lost nothing.
      if (after >= 0 && tap.has(workflowId) && !tap.complete(workflowId, after)) {
        restart = true;
        break;
      }
      for (const { seq, event, id } of batch) {
        if (!(await write(res, frame(`t${seq}`, event, id)))) return;
        after = seq;
        if (event.type === "agent_end") [ended, soon] = [true, 5];
      }
      if (batch.length) continue;
      // agent_end (or a quiet spell): is the chain over? describe answers for its newest run.
      if (ended || !tap.has(workflowId)) {
        ended = false;
        if (await run.closed()) break;
      }
      const before = tap.head(workflowId);
      const quick = soon > 0;
      await tap.wait(workflowId, quick ? 200 * 2 ** (5 - soon--) : IDLE_MS);
      if (res.destroyed) return;
      if (tap.head(workflowId) === before) {
        if (!quick && !(await write(res, ": idle\n\n"))) return;
        if (await run.closed()) break;
      }
    }
  }
  if (!live || restart) {
    if (restart && !(await write(res, RESTART))) return;
    let sent = cursor?.source === "h" && !restart ? cursor.seq + 1 : 0;
    for (;;) {
      const ended = await run.closed();
      const events = transcriptEvents(await run.transcript(), ended);
      for (; sent < events.length; sent++)
        if (!(await write(res, frame(`h${sent}`, events[sent] as WireEvent)))) return;
      if (ended) break;
      await new Promise((r) => setTimeout(r, 1000)); // no tap holds this run: follow its transcript
      if (res.destroyed) return;
    }
  }
  await write(res, "event: end\ndata: {}\n\n");
  res.end();
}
