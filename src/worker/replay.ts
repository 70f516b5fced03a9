/**
 * Replay debugging: run a recorded history against the current workflow code
 * and report whether it is still deterministic, and where it diverges if not.
 */
import { readFile } from "node:fs/promises";
import { historyFromJSON } from "@temporalio/common/lib/proto-utils.js";
import proto, { type temporal } from "@temporalio/proto";
import { Worker, type InjectedSinks, type ReplayWorkerOptions } from "@temporalio/worker";
import { AGENT_RUN_WORKFLOW, type AgentSinks } from "../shared/definitions.js";
import { claimDrivers } from "../node/blobs/config.js";
import { noMetricsSink } from "./telemetry/metrics.js";
import { bundleAgentWorkflows } from "./worker.js";

export type History = temporal.api.history.v1.IHistory;

export interface ReplayOutcome {
  /** Events in the history. */
  events: number;
  /** Set when the current code does not reproduce the history. */
  error?: { message: string; eventId?: number; event?: string; nondeterminism: boolean };
}

/** A history that cannot be replayed as an agent run: unreadable, empty, or another workflow's. `source` names the file or workflow. */
export class ReplayInputError extends Error {
  constructor(
    readonly source: string,
    readonly reason: string,
  ) {
    super(`${source}: ${reason}`);
    this.name = "ReplayInputError";
  }
}

/**
 * Reads a history as a person gets one: the Temporal UI's download (any of its three forms: encoded, decoded,
 * readable), `temporal workflow show --output json` (or jsonl), the server's HTTP API (`{"history": {...}}`, payloads
 * in shorthand) or a bare list of events; ReplayInputError names the file when it cannot.
 */
export async function readHistoryFile(file: string): Promise<History> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    throw new ReplayInputError(
      file,
      `cannot read the file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ReplayInputError(file, `not a JSON history (${(err as Error).message})`);
  }
  try {
    return historyFromFileJSON(json);
  } catch (err) {
    throw new ReplayInputError(file, `not a Temporal history (${(err as Error).message})`);
  }
}

/** A history from any of the JSON shapes readHistoryFile takes (see there); throws when it is none of them. */
export function historyFromFileJSON(json: unknown): History {
  const wrapped = json as { events?: unknown; history?: { events?: unknown } } | null;
  const events = Array.isArray(json)
    ? json
    : Array.isArray(wrapped?.events)
      ? wrapped.events
      : Array.isArray(wrapped?.history?.events)
        ? wrapped.history.events
        : undefined;
  if (!events) throw new TypeError('expected {"events": [...]}, {"history": {"events": [...]}} or a list of events');
  return historyFromJSON({ events: events.map((e) => normalized(e, historyEventType())) });
}

/** What of protobufjs' reflection (the root @temporalio/proto is) the normalizer reads. */
interface ProtoField {
  name: string;
  map: boolean;
  repeated: boolean;
  resolvedType: ProtoType | ProtoEnum | null;
}
interface ProtoType {
  fullName: string;
  fieldsArray: ProtoField[];
  fields: Record<string, ProtoField>;
}
interface ProtoEnum {
  values: Record<string, number>;
}
const isEnum = (t: ProtoType | ProtoEnum | null): t is ProtoEnum => t !== null && "values" in t;

let eventType: ProtoType | undefined;
function historyEventType(): ProtoType {
  if (!eventType) {
    const root = proto as unknown as { lookupType(name: string): ProtoType; resolveAll(): unknown };
    root.resolveAll();
    eventType = root.lookupType("temporal.api.history.v1.History").fields.events.resolvedType as ProtoType;
  }
  return eventType;
}

const PAYLOAD = ".temporal.api.common.v1.Payload";
const PAYLOADS = ".temporal.api.common.v1.Payloads";
const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");
const isBase64 = (s: unknown): s is string =>
  typeof s === "string" && s.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(s);
/** An encoding name as payload metadata spells it ("json/plain", "binary/encrypted"). */
const isEncodingName = (s: unknown) => typeof s === "string" && /^[\w.+-]+\/[\w.+-]+$/.test(s);

/**
 * One event's JSON made proto JSON: enum values in any spelling Temporal tools write ("EVENT_TYPE_TIMER_FIRED",
 * "TimerFired"), payloads in any form (see payloadJSON), whatever field of whatever message holds them.
 */
function normalized(value: unknown, type: ProtoType): unknown {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return value;
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const field of type.fieldsArray) {
    const v = out[field.name];
    if (v === undefined || v === null) continue;
    const resolved = field.resolvedType;
    const one = (x: unknown): unknown => {
      if (resolved === null) return x;
      if (isEnum(resolved)) return enumJSON(x, resolved);
      if (resolved.fullName === PAYLOAD) return payloadJSON(x);
      if (resolved.fullName === PAYLOADS) return payloadsJSON(x);
      if (resolved.fullName.startsWith(".google.protobuf.")) return x;
      return normalized(x, resolved);
    };
    if (field.map && typeof v === "object")
      out[field.name] = Object.fromEntries(Object.entries(v as object).map(([k, x]) => [k, one(x)]));
    else if (field.repeated && Array.isArray(v)) out[field.name] = v.map(one);
    else out[field.name] = one(v);
  }
  return out;
}

function enumJSON(value: unknown, type: ProtoEnum): unknown {
  if (typeof value !== "string" || value in type.values) return value;
  const unspecified = Object.keys(type.values).find((k) => k.endsWith("_UNSPECIFIED"));
  const prefix = unspecified ? unspecified.slice(0, -"UNSPECIFIED".length) : "";
  const constant = value.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toUpperCase();
  return [prefix + constant, constant].find((k) => k in type.values) ?? value;
}

/** Payloads: `{"payloads": [...]}`, or a list of payloads in shorthand (the HTTP API's default). */
function payloadsJSON(value: unknown): unknown {
  if (Array.isArray(value)) return { payloads: value.map(payloadJSON) };
  const list = (value as { payloads?: unknown } | null)?.payloads;
  return Array.isArray(list) ? { ...(value as object), payloads: list.map(payloadJSON) } : value;
}

/**
 * A payload as proto JSON (`{"metadata": {"encoding": base64}, "data": base64}`) from any form a Temporal tool
 * writes: that form itself; the UI's decoded and readable downloads (metadata in plain text, the data as the
 * JSON value it holds); the shorthand of the HTTP API and the CLI (the JSON value alone, null for binary/null, a
 * proto message with its `_protoMessageType`).
 */
function payloadJSON(value: unknown): unknown {
  if (value === null) return { metadata: { encoding: b64("binary/null") } };
  const v = value as { metadata?: Record<string, unknown>; data?: unknown } | undefined;
  const metadata = typeof v === "object" && !Array.isArray(v) ? v.metadata : undefined;
  const keys = typeof v === "object" && !Array.isArray(v) ? Object.keys(v) : [];
  const payloadKeys = keys.every((k) => k === "metadata" || k === "data" || k === "externalPayloads");
  if (metadata && typeof metadata === "object" && payloadKeys) {
    const encoding = metadata.encoding;
    const standard =
      isBase64(encoding) &&
      isEncodingName(Buffer.from(encoding, "base64").toString("utf8")) &&
      Object.values(metadata).every(isBase64) &&
      (v!.data === undefined || v!.data === null || isBase64(v!.data));
    if (standard) return value;
    if (isEncodingName(encoding)) {
      // Readable: every metadata value in plain text, the data as its JSON value (for JSON encodings).
      const plain = Object.fromEntries(
        Object.entries(metadata).map(([k, x]) => [k, b64(typeof x === "string" ? x : JSON.stringify(x))]),
      );
      const data = v!.data;
      if (encoding === "binary/null" || data === undefined) return { metadata: plain };
      const json = String(encoding).startsWith("json/");
      return { metadata: plain, data: json || !isBase64(data) ? b64(JSON.stringify(data)) : data };
    }
  }
  const messageType = (value as { _protoMessageType?: unknown })?._protoMessageType;
  if (typeof messageType === "string") {
    const { _protoMessageType: _, ...message } = value as Record<string, unknown>;
    return {
      metadata: { encoding: b64("json/protobuf"), messageType: b64(messageType) },
      data: b64(JSON.stringify(message)),
    };
  }
  return { metadata: { encoding: b64("json/plain") }, data: b64(JSON.stringify(value)) };
}

/** Checks that a history is an agent run's, so a replay result means something. */
export function checkAgentHistory(history: History, source: string): void {
  const events = history.events ?? [];
  if (events.length === 0) throw new ReplayInputError(source, "the history has no events");
  const started = events[0].workflowExecutionStartedEventAttributes;
  if (!started) throw new ReplayInputError(source, "the history does not start with WorkflowExecutionStarted");
  const type = started.workflowType?.name;
  if (type !== AGENT_RUN_WORKFLOW)
    throw new ReplayInputError(
      source,
      `not an agent run: workflow type "${type ?? "?"}", expected "${AGENT_RUN_WORKFLOW}"`,
    );
  // Claims the replay worker (which has no store) could not read: Temporal's error would name no run or store.
  const drivers = claimDrivers(history);
  if (drivers.length > 0)
    throw new ReplayInputError(
      source,
      `its payloads are in an external blob store (driver ${drivers.join(", ")}): read them first with the store ` +
        "the workers had (npm run replay reads JAI_BLOB_STORE; in code, decodeHistoryPayloads(history, codecs, " +
        "blobStorageFromEnv())): docs/large-payloads.md",
    );
}

/** The parent's id in a sub-agent's id (`<parent>/sub-<turn>-<index>`, see src/workflows/sub-agent.ts). */
const SUB_AGENT_ID = /^(.+)\/sub-\d+-\d+$/;

/** What a history says of its workflow id: the id and where it says it; `needed` when the replay depends on it. */
export interface HistoryWorkflowId {
  workflowId?: string;
  /** Where the history says it. */
  from?: string;
  /** The run started sub-agents, whose ids the replay derives from its own: replayed under another, it diverges. */
  needed: boolean;
}

/**
 * The workflow id a history was recorded under: its first event's `workflowId` (servers since 1.21 write it), else
 * the parent part of the ids of the sub-agents it started. The id matters to a replay only when the run started
 * sub-agents (their ids derive from it); a run that started none replays the same under any id.
 */
export function historyWorkflowId(history: History): HistoryWorkflowId {
  const events = history.events ?? [];
  const children = events.flatMap((e) => {
    const id = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
    return id ? [id] : [];
  });
  const needed = children.length > 0;
  const recorded = events[0]?.workflowExecutionStartedEventAttributes?.workflowId;
  if (recorded) return { workflowId: recorded, from: "its WorkflowExecutionStarted event", needed };
  const parents = new Set(children.map((id) => SUB_AGENT_ID.exec(id)?.[1]));
  const [parent] = parents;
  if (parents.size === 1 && parent) return { workflowId: parent, from: "the ids of the sub-agents it started", needed };
  return { needed };
}

type Event = NonNullable<History["events"]>[number];

/** Events a workflow task's commands produce: where a changed loop shows first. */
const COMMAND_EVENTS = [
  "activityTaskScheduledEventAttributes",
  "timerStartedEventAttributes",
  "markerRecordedEventAttributes",
  "workflowPropertiesModifiedEventAttributes",
  "upsertWorkflowSearchAttributesEventAttributes",
  "activityTaskCancelRequestedEventAttributes",
  "timerCanceledEventAttributes",
  "startChildWorkflowExecutionInitiatedEventAttributes",
  "signalExternalWorkflowExecutionInitiatedEventAttributes",
  "workflowExecutionCompletedEventAttributes",
  "workflowExecutionFailedEventAttributes",
  "workflowExecutionCanceledEventAttributes",
  "workflowExecutionContinuedAsNewEventAttributes",
] as const;

function describeEvent(e: Event): string {
  const kind = COMMAND_EVENTS.find((k) => e[k]);
  const activity = e.activityTaskScheduledEventAttributes?.activityType?.name;
  return `${kind?.replace(/EventAttributes$/, "") ?? "event"}${activity ? ` ${activity}` : ""}`;
}

/** What of an event a divergence message may quote: a sub-agent's id, an activity's type or id, a timer's id, a marker's name. */
function quotedNames(e: Event): string[] {
  return [
    e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId,
    e.activityTaskScheduledEventAttributes?.activityType?.name,
    e.activityTaskScheduledEventAttributes?.activityId,
    e.timerStartedEventAttributes?.timerId,
    e.markerRecordedEventAttributes?.markerName,
  ].filter((x): x is string => !!x);
}

/**
 * Finds the first event the current code disagrees with: replays prefixes cut
 * after each workflow task (binary search), takes the first workflow task whose
 * replay fails, and of the events its commands recorded the one the error names
 * (a sub-agent's id, an activity's type...), else the first.
 */
async function locateDivergence(
  history: History,
  options: ReplayWorkerOptions,
  workflowId: string,
  message: string,
): Promise<{ eventId: number; what: string } | undefined> {
  const events = history.events ?? [];
  const cuts = events.flatMap((e, i) => (e.workflowTaskCompletedEventAttributes ? [i] : []));
  const prefixEnd = (k: number) => {
    let end = cuts[k] + 1;
    while (end < events.length && !events[end].workflowTaskScheduledEventAttributes) end++;
    return end;
  };
  const fails = async (k: number) => {
    try {
      // Under the run's own id: a sub-agent's id derives from it, so any other would fail every prefix that starts one.
      await Worker.runReplayHistory(options, { events: events.slice(0, prefixEnd(k)) }, workflowId);
      return false;
    } catch {
      return true;
    }
  };
  let lo = 0;
  let hi = cuts.length - 1;
  if (hi < 0 || !(await fails(hi))) return undefined;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (await fails(mid)) hi = mid;
    else lo = mid + 1;
  }
  const after = events.slice(cuts[lo] + 1);
  const end = after.findIndex((e) => !COMMAND_EVENTS.some((k) => e[k]));
  const commands = end < 0 ? after : after.slice(0, end);
  const named = commands.find((e) => quotedNames(e).some((name) => message.includes(`'${name}'`)));
  const first = named ?? commands[0] ?? after.find((e) => COMMAND_EVENTS.some((k) => e[k]));
  const at = first ?? events[cuts[lo]];
  return { eventId: Number(at.eventId), what: first ? describeEvent(first) : "workflow task completed" };
}

/** Replay worker options: the loop's event sink is registered (and silent: nothing is re-emitted on replay). */
export function replayOptions(workflowBundle: { code: string }): ReplayWorkerOptions {
  const sinks: InjectedSinks<AgentSinks> = {
    agent: { emit: { fn: () => {}, callDuringReplay: false } },
    metrics: noMetricsSink(),
  };
  return { workflowBundle, sinks };
}

/**
 * Replays one agent run's history; never throws for a divergence, it reports it. ReplayInputError when it is not an
 * agent run's history. `workflowId`: the id it runs under, by default the one the history says (historyWorkflowId).
 */
export async function replayHistory(
  history: History,
  workflowId?: string,
  bundle?: { code: string },
): Promise<ReplayOutcome> {
  const id = workflowId ?? historyWorkflowId(history).workflowId ?? "replay";
  checkAgentHistory(history, id);
  const events = history.events?.length ?? 0;
  const options = replayOptions(bundle ?? (await bundleAgentWorkflows()));
  try {
    await Worker.runReplayHistory(options, history, id);
    return { events };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const nondeterminism = (err as Error)?.name === "DeterminismViolationError" || /nondetermin/i.test(message);
    const where = await locateDivergence(history, options, id, message).catch(() => undefined);
    return { events, error: { message, eventId: where?.eventId, event: where?.what, nondeterminism } };
  }
}

/**
 * What a replay error says diverged, without the SDK's preamble and Core's debug rendering around it: the
 * failure's message ("[TMPRL1100] Nondeterminism error: Child workflow id of scheduled event '…' does not match
 * …") when there is one, else the error's first line.
 */
export function divergenceReason(message: string): string {
  const inner = /message: "((?:[^"\\]|\\.)*)"/.exec(message)?.[1];
  if (inner) return inner.replace(/\\(["\\])/g, "$1");
  return (message.split("\n").find((line) => line.trim() !== "") ?? "").trim();
}

/** A replay's outcome in one line: deterministic, or what diverged and at which event (never a stack trace). */
export function divergenceLine(outcome: ReplayOutcome): string {
  const error = outcome.error;
  if (!error) return `replayed ${outcome.events} events: deterministic`;
  const where = error.eventId !== undefined ? ` at event ${error.eventId} (${error.event})` : "";
  return `replay of ${outcome.events} events diverged${where}${error.nondeterminism ? " (nondeterminism)" : ""}: ${divergenceReason(error.message)}`;
}
