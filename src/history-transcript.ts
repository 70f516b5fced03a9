/**
 * A run's story read from its Temporal history alone (no worker): the input,
 * every model answer and tool result the activities returned, what people sent
 * in through updates, failures, usage and the outcome. `npm run show` prints it;
 * the client uses it to answer for finished runs.
 */
import type { PayloadConverter } from "@temporalio/common";
import type { temporal } from "@temporalio/proto";
import type { AssistantMessage, ToolResultMessage } from "@jai/ai";
import type { AgentMessage, AgentRunInput, AgentRunResult, ExecuteToolInput, ExecuteToolOutput } from "./types.js";
import { addUsage, emptyUsage } from "./workflows/usage.js";

type Event = temporal.api.history.v1.IHistoryEvent;
type Payload = temporal.api.common.v1.IPayload;

/** One line of the story, in history order. */
export type StoryItem =
  | { kind: "message"; message: AgentMessage; eventId: number }
  | { kind: "update"; name: string; args: unknown[]; eventId: number }
  | { kind: "failure"; activity: string; summary?: string; message: string; eventId: number };

export interface RunStory {
  input?: AgentRunInput;
  items: StoryItem[];
  usage: AgentRunResult["usage"];
  status: "running" | "completed" | "failed" | "cancelled" | "terminated" | "timed_out" | "continued";
  result?: AgentRunResult;
  failure?: string;
  events: number;
}

const CLOSE: [keyof Event, RunStory["status"]][] = [
  ["workflowExecutionCompletedEventAttributes", "completed"],
  ["workflowExecutionFailedEventAttributes", "failed"],
  ["workflowExecutionCanceledEventAttributes", "cancelled"],
  ["workflowExecutionTerminatedEventAttributes", "terminated"],
  ["workflowExecutionTimedOutEventAttributes", "timed_out"],
  ["workflowExecutionContinuedAsNewEventAttributes", "continued"],
];

export function storyFromHistory(history: { events?: Event[] | null }, converter: PayloadConverter): RunStory {
  const events = history.events ?? [];
  const decode = <T>(payload: Payload | null | undefined): T | undefined => (payload ? converter.fromPayload<T>(payload as never) : undefined);
  const scheduled = new Map<number, { type: string; input: unknown; summary?: string }>();
  const story: RunStory = { items: [], usage: emptyUsage(), status: "running", events: events.length };

  for (const event of events) {
    const eventId = Number(event.eventId);
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) {
      story.input = decode<AgentRunInput>(started.input?.payloads?.[0]);
      const prompt = story.input?.prompt;
      const at = Number(event.eventTime?.seconds ?? 0) * 1000;
      const opening: AgentMessage[] = Array.isArray(prompt) ? prompt : prompt ? [typeof prompt === "string" ? { role: "user", content: prompt, timestamp: at } : prompt] : [];
      for (const message of opening) story.items.push({ kind: "message", message, eventId });
    }
    const sched = event.activityTaskScheduledEventAttributes;
    if (sched) {
      scheduled.set(eventId, { type: sched.activityType?.name ?? "?", input: decode(sched.input?.payloads?.[0]), summary: decode<string>(event.userMetadata?.summary) });
    }
    const done = event.activityTaskCompletedEventAttributes;
    if (done) {
      const activity = scheduled.get(Number(done.scheduledEventId));
      const result = decode<unknown>(done.result?.payloads?.[0]);
      if (activity?.type === "streamAssistantMessage") {
        const message = result as AssistantMessage;
        story.usage = addUsage(story.usage, message.usage);
        story.items.push({ kind: "message", message, eventId });
      } else if (activity?.type === "executeTool") {
        const call = activity.input as ExecuteToolInput;
        const output = result as ExecuteToolOutput;
        const message: ToolResultMessage = {
          role: "toolResult",
          toolCallId: call.toolCallId,
          toolName: call.toolName,
          content: output.result.content,
          ...(output.result.details !== undefined ? { details: output.result.details } : {}),
          isError: output.isError,
          timestamp: Number(event.eventTime?.seconds ?? 0) * 1000,
        };
        story.items.push({ kind: "message", message, eventId });
      }
    }
    const failed = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
    if (failed) {
      const activity = scheduled.get(Number(failed.scheduledEventId));
      story.items.push({ kind: "failure", activity: activity?.type ?? "?", summary: activity?.summary, message: failed.failure?.message ?? "failed", eventId });
    }
    const update = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
    if (update) {
      story.items.push({ kind: "update", name: update.name ?? "?", args: (update.args?.payloads ?? []).map((p) => decode(p)), eventId });
    }
    for (const [key, status] of CLOSE) {
      const attrs = event[key] as { result?: { payloads?: Payload[] }; failure?: { message?: string } } | undefined;
      if (!attrs) continue;
      story.status = status;
      story.result = decode<AgentRunResult>(attrs.result?.payloads?.[0]);
      story.failure = attrs.failure?.message ?? undefined;
    }
  }
  return story;
}

/** The transcript of a story: the result's messages when the run completed (exact), else what activities returned. */
export function storyTranscript(story: RunStory): AgentMessage[] {
  if (story.result) return [...(Array.isArray(story.input?.prompt) ? story.input!.prompt : []), ...story.result.messages];
  return story.items.flatMap((i) => (i.kind === "message" ? [i.message] : []));
}
