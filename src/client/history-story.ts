/**
 * A run's story read from its Temporal history alone (no worker): the input,
 * every model answer and tool result the activities returned, what people sent
 * in through updates, failures, usage and the outcome. `npm run show` prints it;
 * the client uses it (with history-chain.ts) to answer for finished runs.
 */
import type { LoadedDataConverter, PayloadConverter } from "@temporalio/common";
import type { temporal } from "@temporalio/proto";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { AgentMessage, ApprovalPolicy, AgentRunResult } from "../shared/contracts.js";
import type {
  AgentRunWorkflowInput,
  ExecuteFastToolOutput,
  ExecuteToolInput,
  ExecuteToolOutput,
  StreamAssistantInput,
} from "../shared/wire.js";
import { addUsage, emptyUsage } from "../shared/usage.js";
import { AGENT_RUN_FAILED } from "../shared/definitions.js";
import { decodeHistory } from "../node/codec/history.js";
import { toolResultMessage } from "../shared/tool-result.js";

type Event = temporal.api.history.v1.IHistoryEvent;
type Payload = temporal.api.common.v1.IPayload;

/** One line of the story, in history order. */
export type StoryItem =
  | { kind: "message"; message: AgentMessage; eventId: number }
  | { kind: "update"; name: string; args: unknown[]; eventId: number }
  | { kind: "failure"; activity: string; summary?: string; message: string; eventId: number };

/**
 * What the loop recorded between two model answers, in history order; the
 * transcript of the run is rebuilt from these steps (see runMessages).
 */
export type RunStep =
  /** A model call was scheduled: `context` names the messages added since the previous call. */
  | { kind: "call"; context: StreamAssistantInput["context"] }
  /** A model answer (the activity's result, as the loop took it). */
  | { kind: "reply"; message: AssistantMessage }
  /** A tool activity's output; `at` is the workflow time when the loop took it up. */
  | {
      kind: "toolOutput";
      toolCallId: string;
      toolName: string;
      output: ExecuteToolOutput;
      at: number;
      activityId?: string;
    }
  /** A user message sent in through steer, followUp or prompt; `at` is the workflow time of the handler. */
  | { kind: "userInput"; name: string; message: AgentMessage };

export interface RunStory {
  input?: AgentRunWorkflowInput;
  /** This run's id, the run it continued from (continue-as-new) and the chain's first run. */
  runId?: string;
  previousRunId?: string;
  firstRunId?: string;
  items: StoryItem[];
  /** The loop's steps, for rebuilding the transcript. */
  steps: RunStep[];
  /** Workflow time when a string prompt became a message (the task that took up the setup activity's answer). */
  startedAt?: number;
  usage: AgentRunResult["usage"];
  status: "running" | "completed" | "failed" | "cancelled" | "terminated" | "timed_out" | "continued";
  result?: AgentRunResult;
  /** What each accepted steer, followUp or prompt update sent, by update id. */
  updates: Map<string, unknown>;
  /** The next run's input, when this run continued as new. */
  continuedAs?: AgentRunWorkflowInput;
  /**
   * The approvals as the run's state had them after the last event: its policy (its input's, or what its carry
   * held, then each accepted setApprovalPolicy) and the tools approved with `remember`, as tool-batch-state.ts keeps them.
   */
  approvals?: { policy?: ApprovalPolicy; remembered: string[] };
  failure?: string;
  events: number;
}

/** The events that close a run (continue-as-new included), and the status each gives it. */
export const CLOSE: [keyof Event, RunStory["status"]][] = [
  ["workflowExecutionCompletedEventAttributes", "completed"],
  ["workflowExecutionFailedEventAttributes", "failed"],
  ["workflowExecutionCanceledEventAttributes", "cancelled"],
  ["workflowExecutionTerminatedEventAttributes", "terminated"],
  ["workflowExecutionTimedOutEventAttributes", "timed_out"],
  ["workflowExecutionContinuedAsNewEventAttributes", "continued"],
];

/** A protobuf timestamp in whole milliseconds; 0 when absent. */
export function timestampMs(t: Event["eventTime"]): number {
  return t ? Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6) : 0;
}

/** An event's time in whole milliseconds (Date.now() inside a workflow task is its start event's). */
export function eventMs(event: Event | undefined): number {
  return timestampMs(event?.eventTime);
}

/**
 * For each event, the start of the workflow task that ran the code it woke
 * (the first task after it that completed) and of the task whose commands it
 * records (the last started before it). Failed or timed-out task attempts do not count.
 */
function taskTimes(events: Event[]): { next: number[]; previous: number[] } {
  const completedStart: number[] = []; // indexes of WorkflowTaskStarted events whose task completed
  for (let i = 0; i < events.length; i++) {
    if (!events[i].workflowTaskCompletedEventAttributes) continue;
    let s = i - 1;
    while (s >= 0 && !events[s].workflowTaskStartedEventAttributes) s--;
    if (s >= 0) completedStart.push(s);
  }
  const next: number[] = new Array(events.length).fill(0);
  const previous: number[] = new Array(events.length).fill(0);
  let k = completedStart.length - 1;
  for (let i = events.length - 1; i >= 0; i--) {
    while (k > 0 && completedStart[k - 1] > i) k--;
    next[i] = completedStart[k] !== undefined && completedStart[k] > i ? eventMs(events[completedStart[k]]) : 0;
  }
  let last = 0;
  for (let i = 0; i < events.length; i++) {
    previous[i] = last;
    if (completedStart.includes(i)) last = eventMs(events[i]);
  }
  return { next, previous };
}

function userMessage(input: unknown, at: number): AgentMessage {
  return typeof input === "string" ? { role: "user", content: input, timestamp: at } : (input as AgentMessage);
}

/**
 * storyFromHistory for a history as Temporal stores it: its payloads are first
 * decoded through the converter's codecs (encryption, compression), so a
 * missing or wrong key fails here with the codec's error instead of a misread.
 */
export async function storyFromEncodedHistory(
  history: { events?: Event[] | null },
  converter: LoadedDataConverter,
): Promise<RunStory> {
  return storyFromHistory(await decodeHistory(history, converter), converter.payloadConverter);
}

/** A run's story from a history whose payloads are already decoded (no codec, or see storyFromEncodedHistory). */
export function storyFromHistory(history: { events?: Event[] | null }, converter: PayloadConverter): RunStory {
  const events = history.events ?? [];
  const decode = <T>(payload: Payload | null | undefined): T | undefined =>
    payload ? converter.fromPayload<T>(payload as never) : undefined;
  const scheduled = new Map<number, { type: string; id?: string; input: unknown; summary?: string }>();
  const story: RunStory = {
    items: [],
    steps: [],
    updates: new Map(),
    usage: emptyUsage(),
    status: "running",
    events: events.length,
  };
  const approvals: NonNullable<RunStory["approvals"]> = { remembered: [] };
  story.approvals = approvals;
  const times = taskTimes(events);
  let lastReply: AssistantMessage | undefined;

  events.forEach((event, index) => {
    const eventId = Number(event.eventId);
    const started = event.workflowExecutionStartedEventAttributes;
    if (started) {
      story.input = decode<AgentRunWorkflowInput>(started.input?.payloads?.[0]);
      story.runId = started.originalExecutionRunId ?? undefined;
      story.previousRunId = started.continuedExecutionRunId || undefined;
      story.firstRunId = started.firstExecutionRunId ?? undefined;
      story.startedAt = times.next[index];
      // As the run starts its approvals (startApprovals): what its carry held, else its input's policy.
      const carried = story.input?.continued?.approvals;
      const policy = carried ? carried.policy : story.input?.approvalPolicy;
      if (policy !== undefined) approvals.policy = policy;
      approvals.remembered = [...(carried?.remembered ?? [])];
      const prompt = story.input?.prompt;
      if (!story.input?.continued) {
        const opening: AgentMessage[] = Array.isArray(prompt)
          ? prompt
          : prompt
            ? [userMessage(prompt, story.startedAt)]
            : [];
        for (const message of opening) story.items.push({ kind: "message", message, eventId });
      }
    }
    const sched = event.activityTaskScheduledEventAttributes;
    if (sched) {
      const activity = {
        type: sched.activityType?.name ?? "?",
        id: sched.activityId ?? undefined,
        input: decode(sched.input?.payloads?.[0]),
        summary: decode<string>(event.userMetadata?.summary),
      };
      scheduled.set(eventId, activity);
      if (activity.type === "streamAssistantMessage")
        story.steps.push({ kind: "call", context: (activity.input as StreamAssistantInput).context });
    }
    const done = event.activityTaskCompletedEventAttributes;
    if (done) {
      const activity = scheduled.get(Number(done.scheduledEventId));
      const result = decode<unknown>(done.result?.payloads?.[0]);
      if (activity?.type === "streamAssistantMessage") {
        // Routed calls answer { message, taskQueue }.
        const message = (result as { message?: AssistantMessage }).message ?? (result as AssistantMessage);
        story.usage = addUsage(story.usage, message.usage);
        story.items.push({ kind: "message", message, eventId });
        story.steps.push({ kind: "reply", message });
        lastReply = message;
      } else if (activity?.type === "resolveRunSetup") {
        story.startedAt = times.next[index]; // a string prompt becomes a message once the setup is in
      } else if (activity?.type === "executeTool") {
        const call = activity.input as ExecuteToolInput;
        addToolOutput(
          story,
          {
            toolCallId: call.toolCallId,
            toolName: call.toolName,
            output: result as ExecuteToolOutput,
            at: times.next[index],
            activityId: activity.id,
          },
          eventId,
        );
      }
    }
    // Local activities (the setup, fast tools) leave a marker with their type and result, not their input.
    const marker = event.markerRecordedEventAttributes;
    if (marker?.markerName === "core_local_activity") {
      const data = decode<{ activity_type?: string }>(marker.details?.data?.payloads?.[0]);
      const result = decode<unknown>(marker.details?.result?.payloads?.[0]);
      if (data?.activity_type === "resolveRunSetup" && result)
        story.startedAt = times.previous[index]; // run in the first task
      else if (data?.activity_type === "executeFastTool" && result) {
        const output = result as ExecuteFastToolOutput;
        addToolOutput(
          story,
          {
            toolCallId: output.toolCallId,
            toolName: output.toolName,
            output,
            at: times.previous[index],
            activityId: output.outputKey,
          },
          eventId,
        );
      }
    }
    const failed = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
    if (failed) {
      const activity = scheduled.get(Number(failed.scheduledEventId));
      story.items.push({
        kind: "failure",
        activity: activity?.type ?? "?",
        summary: activity?.summary,
        message: failed.failure?.message ?? "failed",
        eventId,
      });
    }
    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes;
    const update = accepted?.acceptedRequest?.input;
    if (update) {
      const args = (update.args?.payloads ?? []).map((p) => decode(p));
      const name = update.name ?? "?";
      story.items.push({ kind: "update", name, args, eventId });
      const updateId = accepted?.acceptedRequest?.meta?.updateId ?? accepted?.protocolInstanceId;
      if (updateId) story.updates.set(updateId, args[0]);
      if (name === "steer" || name === "followUp" || name === "prompt")
        story.steps.push({ kind: "userInput", name, message: userMessage(args[0], times.previous[index]) });
      // An accepted update always applies (its validator ran before it was written): as the handlers apply it.
      if (name === "setApprovalPolicy") {
        const policy = args[0] as ApprovalPolicy | undefined | null;
        if (policy !== undefined && policy !== null) approvals.policy = policy;
        else delete approvals.policy;
      }
      if (name === "approve" && (args[1] as { remember?: unknown } | undefined)?.remember === true) {
        // The call waits in the current batch: the last model answer's.
        const call = lastReply?.content.find((c): c is ToolCall => c.type === "toolCall" && c.id === args[0]);
        if (call && !approvals.remembered.includes(call.name)) approvals.remembered.push(call.name);
      }
    }
    for (const [key, status] of CLOSE) {
      const attrs = event[key] as
        | {
            result?: { payloads?: Payload[] };
            failure?: {
              message?: string;
              applicationFailureInfo?: { type?: string; details?: { payloads?: Payload[] } };
            };
            input?: { payloads?: Payload[] };
          }
        | undefined;
      if (!attrs) continue;
      story.status = status;
      const info = attrs.failure?.applicationFailureInfo;
      if (status === "continued") story.continuedAs = decode<AgentRunWorkflowInput>(attrs.input?.payloads?.[0]);
      // A run that ended with stopReason "error" fails with its result in the failure's details.
      else if (info?.type === AGENT_RUN_FAILED) story.result = decode<AgentRunResult>(info.details?.payloads?.[0]);
      else story.result = decode<AgentRunResult>(attrs.result?.payloads?.[0]);
      story.failure = attrs.failure?.message ?? undefined;
    }
  });
  return story;
}

/** A tool activity's output: a message of the story, and a step the transcript is rebuilt from. */
function addToolOutput(
  story: RunStory,
  step: Omit<Extract<RunStep, { kind: "toolOutput" }>, "kind">,
  eventId: number,
): void {
  story.items.push({
    kind: "message",
    message: toolResultMessage(step.toolCallId, step.toolName, step.output, step.at),
    eventId,
  });
  story.steps.push({ kind: "toolOutput", ...step });
}

/** The transcript of one run (no continue-as-new): the result's messages when it kept them all, else rebuilt from the steps. */
export function storyTranscript(story: RunStory): AgentMessage[] {
  const seed = !story.input?.continued && Array.isArray(story.input?.prompt) ? story.input.prompt : [];
  if (story.result && story.result.messagesOmitted === undefined && !story.input?.continued)
    return [...seed, ...story.result.messages];
  return runMessages(story).messages;
}

/**
 * This run's own transcript messages (the part the transcript query of this
 * run answers for), rebuilt from its steps:
 * - what entered before a model call is that call's `context.append`, exact
 *   (tool results by reference resolve to their activity's output, details included);
 * - when a call carried no append (context compacted just before it, or the
 *   new messages were too big to ride along), the tool outputs and user
 *   messages recorded since the previous answer stand in for it: `exact` is then false;
 * - after the last answer come that batch's tool results (the caller may know
 *   them exactly from the next run's carry or the result: see history-chain.ts).
 */
export function runMessages(story: RunStory): {
  messages: AgentMessage[];
  exact: boolean;
  tailFrom: number;
  tailExact: boolean;
} {
  const out: AgentMessage[] = [];
  let exact = true;
  const carried = story.input?.continued;
  // The context the worker knows after each answer; -1: the next call must start from scratch.
  let known = 0;
  let epoch: number | undefined;
  let firstCall = true;
  let since: RunStep[] = []; // outputs and inputs since the last answer
  let lastReply: AssistantMessage | undefined;
  let tailFrom = 0;
  if (!carried) {
    const prompt = story.input?.prompt;
    const opening = Array.isArray(prompt)
      ? prompt
      : prompt !== undefined
        ? [userMessage(prompt, story.startedAt ?? 0)]
        : [];
    out.push(...opening);
  }
  const outputs = (steps: RunStep[]) =>
    steps.filter((s): s is Extract<RunStep, { kind: "toolOutput" }> => s.kind === "toolOutput");
  const stand_in = (steps: RunStep[]): AgentMessage[] => {
    const results = toolResultsFor(lastReply, outputs(steps));
    const inputs = steps.flatMap((s) => (s.kind === "userInput" ? [s.message] : []));
    return [...results, ...inputs];
  };
  let awaitingFirstCallAfterReply = true;
  for (const step of story.steps) {
    if (step.kind === "call") {
      if (!awaitingFirstCallAfterReply) continue; // a retry after a context overflow: the same messages
      awaitingFirstCallAfterReply = false;
      const { context } = step;
      const sameEpoch = epoch === undefined || context.epoch === epoch;
      const complete = firstCall ? context.base === 0 && sameEpoch : sameEpoch && context.base === known;
      if (complete) {
        let append = context.append;
        // The first call of a continued run re-sends the carried context: not this run's messages.
        if (firstCall && carried) append = append.slice(carried.context.length);
        // On the first call of a fresh run the append opens with the prompt: exact as the loop made it,
        // but a seeded transcript's details are stripped there, so those come from the input.
        if (firstCall && !carried) {
          const seeded = Array.isArray(story.input?.prompt) ? out.length : 0;
          out.length = seeded;
          append = append.slice(seeded);
        }
        const pool = outputs(since);
        for (const m of append) {
          // References have no role; a message may carry any other key (a user message object with a `ref` key stays a message).
          if (!("role" in m) && m.ref === "userInput") {
            const message = userInputAt(story, m.source, m.timestamp);
            out.push(message ?? missingInput(m.source, m.timestamp));
            if (!message) exact = false;
          } else if (!("role" in m)) {
            // By the activity's id when the reference has one: models reuse tool-call ids.
            const found = pool.find((o) =>
              m.activityId !== undefined ? o.activityId === m.activityId : o.toolCallId === m.toolCallId,
            );
            if (found) pool.splice(pool.indexOf(found), 1);
            out.push(
              found
                ? toolResultMessage(found.toolCallId, found.toolName, found.output, m.timestamp)
                : missingResult(m.toolCallId, m.timestamp),
            );
            if (!found) exact = false;
          } else if (m.role === "toolResult" && m.isError && m.details === undefined) {
            // The model's copy has no details; an error result the loop (or a tool's throw) made carries `details: {}`.
            out.push({ ...m, details: {} });
          } else out.push(m as AgentMessage);
        }
      } else {
        out.push(...stand_in(since));
        exact = false;
      }
      epoch = context.epoch;
      known = context.base + context.append.length;
      firstCall = false;
      since = [];
    } else if (step.kind === "reply") {
      out.push(step.message);
      lastReply = step.message;
      known += 1;
      since = [];
      awaitingFirstCallAfterReply = true;
      tailFrom = out.length;
    } else since.push(step);
  }
  const tail = lastReply || !firstCall ? toolResultsFor(lastReply, outputs(since)) : [];
  out.push(...tail);
  return { messages: out, exact, tailFrom, tailExact: !tail.some(isMissing) };
}

/** The user message a `UserInputRef` names: sent by an update of this run, carried by its input, or its prompt. */
function userInputAt(story: RunStory, source: string, timestamp: number): AgentMessage | undefined {
  const colon = source.indexOf(":");
  const kind = source.slice(0, colon);
  const where = source.slice(colon + 1);
  let input: unknown;
  if (kind === "update") input = story.updates.get(where);
  else if (kind === "prompt") {
    const prompt = story.input?.prompt;
    input = Array.isArray(prompt) ? prompt[Number(where)] : where === "0" ? prompt : undefined;
  } else if (kind === "carried") {
    const [queue, index] = where.split(":");
    const carry = story.input?.continued;
    const i = Number(index);
    if (queue === "steering") input = carry?.steering[i];
    else if (queue === "followUps") input = carry?.followUps[i];
    else if (queue === "prompts") input = carry?.prompts?.[i]?.message;
    else if (queue === "pending") input = carry?.loop?.pending?.[i];
  }
  return input === undefined || input === null ? undefined : userMessage(input, timestamp);
}

function missingInput(source: string, timestamp: number): AgentMessage {
  return { role: "user", content: `(the user message ${source} is not in this run's history)`, timestamp };
}

/** The batch's results as far as activities produced them; calls without one get a placeholder. */
function toolResultsFor(
  reply: AssistantMessage | undefined,
  outputs: Extract<RunStep, { kind: "toolOutput" }>[],
): AgentMessage[] {
  const calls = (reply?.content ?? []).filter((c): c is ToolCall => c.type === "toolCall");
  const pool = [...outputs];
  return calls.map((call) => {
    const found = pool.find((o) => o.toolCallId === call.id);
    if (!found) return missingResult(call.id, 0, call.name);
    pool.splice(pool.indexOf(found), 1);
    return toolResultMessage(found.toolCallId, found.toolName, found.output, found.at);
  });
}

const MISSING = "(no tool activity output in history: the loop made this result; see the run's events)";
const isMissing = (m: AgentMessage) =>
  m.role === "toolResult" && m.content[0]?.type === "text" && m.content[0].text === MISSING;

function missingResult(toolCallId: string, timestamp: number, toolName = "?"): ToolResultMessage {
  return {
    role: "toolResult",
    toolCallId,
    toolName,
    content: [{ type: "text", text: MISSING }],
    isError: true,
    timestamp,
  };
}
