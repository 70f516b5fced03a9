/**
 * The wire form of AgentEvents: what the event tap keeps and serves. A
 * `message_update` carries pi's whole partial message, so shipping it per
 * delta is quadratic in the message length; on the wire it carries only the
 * delta (the assistant event without `partial`), the content block it touched
 * when that is not a plain text/thinking append, and the message's top-level
 * fields that changed (usage, stopReason, ...). `partialRebuilder` turns the
 * wire form back into the events `onEvent` got, rebuilding one partial message
 * per stream on the client.
 */
import type { AssistantMessage, AssistantMessageEvent } from "@jai/ai";
import type { AgentEvent } from "./contracts.js";

type DeltaEvent = Extract<AgentEvent, { type: "message_update" }>;
type Block = AssistantMessage["content"][number];

/** A message_update without its partial message: the delta and what else changed. */
export interface WireDelta {
  type: "message_update";
  /** The assistant event without `partial`. */
  assistantEvent: Omit<AssistantMessageEvent, "partial">;
  /** The content block at `contentIndex` after this event, when it is not a plain text/thinking append. */
  block?: Block;
  /** Top-level fields of the partial message (all but content) that changed since the last event of this stream. */
  meta?: Partial<AssistantMessage>;
}

/** What the tap stores and serves: every AgentEvent as is, except message_update as a WireDelta. */
export type WireEvent = Exclude<AgentEvent, DeltaEvent> | WireDelta;

/** An event with its position in the run's event log (resume after it with `from: seq`). */
export interface SequencedEvent {
  seq: number;
  event: WireEvent;
  /** The event's `eventId` (AgentEventRef), when its sink gave one. */
  id?: string;
}

/**
 * The data of an SSE `agent` frame: the wire event, with the event's `eventId` beside its fields when it has
 * one (events from the tap); events rebuilt from a transcript have none (their cursor `h<n>` is their identity).
 */
export type WireFrame = WireEvent & { eventId?: string };

/** Splits an `agent` frame's data into the wire event and its id. */
export function unframe(data: WireFrame): { event: WireEvent; eventId?: string } {
  if (data.eventId === undefined) return { event: data };
  const { eventId, ...event } = data;
  return { event: event as WireEvent, eventId };
}

// The partial message is mutated in place by the stream: whatever the tap keeps must be a copy taken now.
const clone = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const APPEND = new Set(["text_delta", "thinking_delta"]);

function metaOf(message: AssistantMessage): string {
  const { content: _content, ...rest } = message;
  return JSON.stringify(rest);
}

/** One encoder per run: remembers the last top-level fields it shipped for the stream in progress. */
export function deltaEncoder(): (event: AgentEvent) => WireEvent {
  let lastMeta = "";
  return (event) => {
    if (event.type === "message_start" && event.message.role === "assistant") {
      lastMeta = metaOf(event.message);
      return { type: "message_start", message: clone(event.message) };
    }
    if (event.type !== "message_update") return event;
    const { partial: _partial, ...assistantEvent } = event.assistantEvent as AssistantMessageEvent & {
      partial?: unknown;
      contentIndex?: number;
    };
    const wire: WireDelta = { type: "message_update", assistantEvent };
    const index = assistantEvent.contentIndex;
    if (index !== undefined && !APPEND.has(assistantEvent.type) && event.message.content[index])
      wire.block = clone(event.message.content[index]);
    const meta = metaOf(event.message);
    if (meta !== lastMeta) {
      lastMeta = meta;
      wire.meta = JSON.parse(meta) as Partial<AssistantMessage>;
    }
    return wire;
  };
}

/**
 * One rebuilder per subscription: turns wire events back into AgentEvents. As
 * with pi, every message_update of one stream shares one partial message that
 * is updated in place (clone it to keep a snapshot).
 */
export function partialRebuilder(): (event: WireEvent) => AgentEvent {
  let partial: AssistantMessage | undefined;
  return (event) => {
    if (event.type === "message_start" && event.message.role === "assistant") partial = clone(event.message);
    if (event.type !== "message_update") return event;
    partial ??= { role: "assistant", content: [] } as unknown as AssistantMessage;
    const e = event.assistantEvent as { type: string; contentIndex?: number; delta?: string };
    if (event.meta) Object.assign(partial, event.meta);
    const index = e.contentIndex;
    if (index !== undefined) {
      if (event.block) partial.content[index] = clone(event.block);
      else if (e.type === "text_delta") (partial.content[index] as { text: string }).text += e.delta ?? "";
      else if (e.type === "thinking_delta") (partial.content[index] as { thinking: string }).thinking += e.delta ?? "";
    }
    return {
      type: "message_update",
      message: partial,
      assistantEvent: { ...event.assistantEvent, partial } as AssistantMessageEvent,
    } satisfies DeltaEvent;
  };
}
