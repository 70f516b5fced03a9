/**
 * A history file in every shape a person gets one (src/worker/replay.ts, readHistoryFile): `temporal workflow show
 * --output json`, the Temporal UI's downloads (encoded, decoded, readable), the server's HTTP API (payload
 * shorthand, `{"history": ...}`), a bare list, older event-type spellings; all read as the same history. And the
 * workflow id a history says, which a run with sub-agents replays under. No server.
 */
import { describe, expect, it } from "@jest/globals";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { divergenceReason, historyFromFileJSON, historyWorkflowId } from "../../src/worker/replay.js";

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/histories");
const load = (name: string) => JSON.parse(readFileSync(path.join(fixtures, name), "utf8")) as { events: unknown[] };

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const text = (b64: string) => Buffer.from(b64, "base64").toString("utf8");
const isPayload = (v: unknown): v is { metadata: Record<string, string>; data?: string } =>
  isObject(v) && isObject(v.metadata) && typeof v.metadata.encoding === "string" && Object.keys(v).length <= 2;

/** Every value of `json` passed through `f` bottom-up (payload rewrites see the original payloads). */
function rewrite(json: unknown, f: (value: unknown, key: string) => unknown, key = ""): unknown {
  const inner = Array.isArray(json)
    ? json.map((v) => rewrite(v, f))
    : isObject(json) && !isPayload(json)
      ? Object.fromEntries(Object.entries(json).map(([k, v]) => [k, rewrite(v, f, k)]))
      : json;
  return f(inner, key);
}

/** The UI's "readable" download (decodePayload(payload, false)): metadata in plain text, the data parsed. */
const readable = (value: unknown) =>
  isPayload(value)
    ? {
        metadata: Object.fromEntries(Object.entries(value.metadata).map(([k, v]) => [k, text(v)])),
        data: value.data === undefined ? null : JSON.parse(text(value.data)),
      }
    : value;

/** The HTTP API's payload shorthand (go.temporal.io/api): a json/plain payload is its value, Payloads a list. */
function shorthand(value: unknown): unknown {
  if (isPayload(value)) {
    const encoding = text(value.metadata.encoding);
    if (encoding === "binary/null") return null;
    if (encoding === "json/plain" && Object.keys(value.metadata).length === 1) return JSON.parse(text(value.data!));
    return value;
  }
  if (isObject(value) && Array.isArray(value.payloads) && Object.keys(value).length === 1) return value.payloads;
  return value;
}

/** How older tools (tctl, the UI's first versions) spelled enums: "WorkflowExecutionStarted", "Normal". */
function oldEnums(value: unknown, key: string): unknown {
  if (typeof value !== "string") return value;
  const prefix = { eventType: "EVENT_TYPE_", kind: "TASK_QUEUE_KIND_" }[key];
  if (!prefix || !value.startsWith(prefix)) return value;
  return value
    .slice(prefix.length)
    .toLowerCase()
    .replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

describe("readHistoryFile's shapes", () => {
  for (const name of ["frozen/before-subagent-depth.json", "later-features.json", "approval-denied.json"]) {
    it(`${name}: every shape reads as the history \`temporal workflow show --output json\` gives`, () => {
      const json = load(name);
      const expected = historyFromFileJSON(json);
      expect(expected.events?.length).toBe(json.events.length);
      const shapes: [string, unknown][] = [
        ["a bare list of events", json.events],
        ["the UI's readable download", rewrite(json, readable)],
        [
          "the UI's decoded download without a codec (memo, search attributes and headers readable)",
          rewrite(json, (v, key) =>
            ["fields", "indexedFields"].includes(key) && isObject(v)
              ? Object.fromEntries(Object.entries(v).map(([k, p]) => [k, readable(p)]))
              : v,
          ),
        ],
        ["the HTTP API's answer, payloads in shorthand", { history: rewrite(json, shorthand) }],
        ["older enum spellings", rewrite(json, oldEnums)],
      ];
      for (const [shape, form] of shapes) {
        expect(JSON.stringify(form)).not.toBe(JSON.stringify(json)); // each shape differs from the file
        expect([shape, historyFromFileJSON(form)]).toEqual([shape, expected]);
      }
    });
  }

  it("refuses what is no history, saying what it expected", () => {
    expect(() => historyFromFileJSON({ runs: [] })).toThrow(/expected \{"events": \[\.\.\.\]\}/);
  });
});

describe("historyWorkflowId", () => {
  const parentOf = (id: string) => id.replace(/\/sub-\d+-\d+$/, "");
  const child = historyFromFileJSON(load("frozen/before-subagent-depth.json"));
  const started = child.events![0].workflowExecutionStartedEventAttributes!;
  const childId = child.events!.find((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)!
    .startChildWorkflowExecutionInitiatedEventAttributes!.workflowId!;

  it("reads the id the first event records; a run that started sub-agents needs it", () => {
    expect(historyWorkflowId(child)).toEqual({
      workflowId: started.workflowId,
      from: "its WorkflowExecutionStarted event",
      needed: true,
    });
    expect(parentOf(childId)).toBe(started.workflowId);
  });

  it("without it (servers before 1.21), reads it from the ids of the sub-agents it started", () => {
    const older = historyFromFileJSON(load("frozen/before-subagent-depth.json"));
    older.events![0].workflowExecutionStartedEventAttributes!.workflowId = "";
    expect(historyWorkflowId(older)).toEqual({
      workflowId: started.workflowId,
      from: "the ids of the sub-agents it started",
      needed: true,
    });
    for (const e of older.events!)
      if (e.startChildWorkflowExecutionInitiatedEventAttributes)
        e.startChildWorkflowExecutionInitiatedEventAttributes.workflowId = "not-a-sub-agent-id";
    expect(historyWorkflowId(older)).toEqual({ needed: true });
  });

  it("a run that started no sub-agent replays under any id", () => {
    const plain = historyFromFileJSON(load("text-only.json"));
    expect(historyWorkflowId(plain)).toMatchObject({ workflowId: "golden-text-only", needed: false });
    plain.events![0].workflowExecutionStartedEventAttributes!.workflowId = "";
    expect(historyWorkflowId(plain)).toEqual({ needed: false });
  });
});

describe("divergenceReason", () => {
  it("takes Core's failure message out of the SDK's rendering", () => {
    const message =
      "Replay failed with a nondeterminism error. This means that the workflow code as written is not compatible " +
      'with the history that was fed in. Details: Workflow activation completion failed: Failure { failure: Some(Failure { message: "[TMPRL1100] Nondeterminism error: Child workflow id of scheduled event \'a/sub-1-0\' does not match child workflow id of command \'b/sub-1-0\'", source: "", stack_trace: "" }) }';
    expect(divergenceReason(message)).toBe(
      "[TMPRL1100] Nondeterminism error: Child workflow id of scheduled event 'a/sub-1-0' does not match child workflow id of command 'b/sub-1-0'",
    );
    expect(divergenceReason("Workflow failed\n    at x (y.js:1:1)")).toBe("Workflow failed");
  });
});
