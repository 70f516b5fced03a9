/**
 * Where a run's time went, per turn, from its history alone (event types, times and attempts: no payload is read,
 * so it works on encrypted runs without a key): the model streaming, each tool, the wait for a worker to pick an
 * activity up, retries, and the waits for a person (an approval) or a client (a client tool's result). The console
 * draws it (GET /runs/:id/timeline); live runs too, their open spans ending "now".
 */
import type { temporal } from "@temporalio/proto";
import { CLOSE, timestampMs } from "./history-story.js";

type Event = temporal.api.history.v1.IHistoryEvent;

/** What a span of time was spent on. */
export type SpanKind = "model" | "tool" | "worker-wait" | "retry" | "approval" | "client" | "other";

export interface TimelineSpan {
  kind: SpanKind;
  /** What it was: "model call", a tool call's id, "approve", ... */
  label: string;
  /** ms since the epoch (workflow history time). */
  start: number;
  /** Absent while it goes on. */
  end?: number;
  /** The attempt that ran (retries: how many attempts it took). */
  attempts?: number;
}

export interface TimelineTurn {
  turn: number;
  start: number;
  end?: number;
  spans: TimelineSpan[];
}

export interface RunTimeline {
  workflowId: string;
  start: number;
  /** Absent while the run is open. */
  end?: number;
  /** When this was read: where open spans end. */
  now: number;
  turns: TimelineTurn[];
}

const MODEL = "streamAssistantMessage";
const TOOLS = new Set(["executeTool", "prepareToolCall"]);
/** Updates a person or a client answers a waiting call with. */
const PEOPLE: Record<string, SpanKind> = { approve: "approval", deny: "approval", submitToolResult: "client" };

interface Activity {
  type: string;
  id: string;
  turn: number;
  scheduled: number;
  started?: number;
  attempt?: number;
  ended?: number;
}

/** The run's timeline from its history's events. */
export function timelineOf(workflowId: string, events: Event[], now = Date.now()): RunTimeline {
  const activities = new Map<string, Activity>();
  const turns: TimelineTurn[] = [];
  const people: { kind: SpanKind; label: string; at: number; turn: number }[] = [];
  let turn = 0;
  let start = 0;
  let end: number | undefined;
  /** When the current turn's model answer came back: a person's or client's wait starts there. */
  const answered = new Map<number, number>();
  for (const e of events) {
    const at = timestampMs(e.eventTime);
    if (e.workflowExecutionStartedEventAttributes) start = at;
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType?.name ?? "";
      if (type === MODEL) {
        turn++;
        turns.push({ turn, start: at, spans: [] });
      }
      activities.set(String(e.eventId), { type, id: scheduled.activityId ?? "", turn, scheduled: at });
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const a = activities.get(String(started.scheduledEventId));
      if (a) Object.assign(a, { started: at, attempt: started.attempt ?? 1 });
    }
    const closed =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes ??
      e.activityTaskCanceledEventAttributes;
    if (closed) {
      const a = activities.get(String(closed.scheduledEventId));
      if (a) {
        a.ended = at;
        if (a.type === MODEL) answered.set(a.turn, at);
      }
    }
    const accepted = e.workflowExecutionUpdateAcceptedEventAttributes;
    const name = accepted?.acceptedRequest?.input?.name ?? "";
    if (accepted && PEOPLE[name]) people.push({ kind: PEOPLE[name], label: name, at, turn });
    if (CLOSE.some(([field]) => e[field])) end = at;
  }
  for (const a of activities.values()) {
    const t = turns[a.turn - 1];
    if (!t) continue;
    const kind: SpanKind = a.type === MODEL ? "model" : TOOLS.has(a.type) ? "tool" : "other";
    const label = a.type === MODEL ? "model call" : TOOLS.has(a.type) ? a.id.replace(/^tool-\d+-\d+-/, "") : a.type;
    if (a.started !== undefined && a.started > a.scheduled) {
      // Before its last attempt began: a worker's pickup (attempt 1), or failed attempts and their backoff.
      const retried = (a.attempt ?? 1) > 1;
      t.spans.push({
        kind: retried ? "retry" : "worker-wait",
        label: retried ? `${label}: ${a.attempt} attempts` : `${label}: waiting for a worker`,
        start: a.scheduled,
        end: a.started,
        ...(retried ? { attempts: a.attempt } : {}),
      });
    }
    t.spans.push({ kind, label, start: a.started ?? a.scheduled, ...(a.ended !== undefined ? { end: a.ended } : {}) });
  }
  for (const p of people) {
    const t = turns[p.turn - 1];
    const from = answered.get(p.turn);
    if (t && from !== undefined && p.at > from) t.spans.push({ kind: p.kind, label: p.label, start: from, end: p.at });
  }
  turns.forEach((t, i) => {
    t.spans.sort((a, b) => a.start - b.start);
    const next = turns[i + 1]?.start ?? end;
    const last = Math.max(...t.spans.map((s) => s.end ?? now));
    t.end = next ?? (end !== undefined ? end : last === now ? undefined : last);
  });
  return { workflowId, start, ...(end !== undefined ? { end } : {}), now, turns };
}
