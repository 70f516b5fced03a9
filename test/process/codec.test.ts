/**
 * Encrypted transcripts (issue 12): with the AES-256-GCM codec on, the server's
 * history holds no plaintext of a run (prompt, tool args, results, details,
 * steering, approvals, continue-as-new carry, final result) while the run, a
 * second worker's context-cache miss, show and replay all work; keys rotate;
 * a missing or wrong key is a named, typed error.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@temporalio/client";
import { historyToJSON } from "@temporalio/common/lib/proto-utils.js";
import proto from "@temporalio/proto";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { getAgentRun, startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import { AesGcmCodec, CodecKeyError, ENCRYPTED_ENCODING, KEY_ID_METADATA } from "../../src/node/codec/aes-gcm.js";
import { parseCodecKeys } from "../../src/node/codec/config.js";
import { decodeHistory } from "../../src/node/codec/history.js";
import { closedRunView } from "../../src/client/history-view.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import {
  deferred,
  fauxModel,
  openTestEnv,
  stateWhen,
  testWorker,
  uniqueId,
  within,
  type TestEnv,
} from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";
import { nodeEntry } from "../support/entry.js";
import { waitFor } from "../support/crash/harness.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const KEY_A = "A:" + Buffer.alloc(32, 1).toString("base64");
const KEY_B = "B:" + Buffer.alloc(32, 2).toString("base64");
const converter = (keys: string, compress = false) => ({
  payloadCodecs: [new AesGcmCodec({ keys: parseCodecKeys(keys, "test"), compress })],
});

let env: TestEnv;
let clientA: Client;
beforeAll(async () => {
  env = await openTestEnv();
  // Every worker of this file has a codec: its workflow bundle encrypts failures too.
  env = { ...env, bundle: await sharedBundle("encrypted-failures") };
  clientA = new Client({ connection: env.client.connection, dataConverter: converter(KEY_A) });
});
afterAll(async () => {
  await env?.close();
});

/** Every event of every run of a workflow's chain, read with NO codec: what Temporal stores. */
async function rawChain(workflowId: string): Promise<Event[]> {
  const all: Event[] = [];
  const newest = await env.client.workflow.getHandle(workflowId).fetchHistory();
  for (let events = newest.events ?? []; ; ) {
    all.unshift(...events);
    const previous = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    if (!previous) break;
    events = (await env.client.workflow.getHandle(workflowId, previous).fetchHistory()).events ?? [];
  }
  return all;
}

const eventBytes = (e: Event) => Buffer.from(proto.temporal.api.history.v1.HistoryEvent.encode(e).finish());

/** Key ids named by the encrypted payloads of some events. */
function keyIds(events: Event[]): Set<string> {
  const ids = new Set<string>();
  const walk = (v: unknown): void => {
    if (typeof v !== "object" || v === null || v instanceof Uint8Array) return;
    const meta = (v as { metadata?: Record<string, Uint8Array> }).metadata;
    if (meta?.encoding && Buffer.from(meta.encoding).toString() === ENCRYPTED_ENCODING)
      ids.add(Buffer.from(meta[KEY_ID_METADATA]).toString());
    for (const c of Object.values(v)) walk(c);
  };
  events.forEach(walk);
  return ids;
}

/**
 * A tool gated by approval that echoes a secret in its result and details; it returns once `after` resolves
 * (a test sends an update while the call runs, when the loop neither skips the call nor has asked the model yet).
 */
function secretTool(sentinel: string, after?: Promise<void>): AgentTool {
  return {
    name: "lookup",
    description: "looks a secret up",
    parameters: Type.Object({ q: Type.String() }),
    requiresApproval: true,
    async execute(_id, args: any) {
      await after;
      return {
        content: [{ type: "text", text: `${sentinel}-result for ${args.q}` }],
        details: { found: `${sentinel}-details` },
      };
    },
  };
}

/** Faux model: two approved tool calls (args carry the sentinel), then a final answer with it; answers from the context. */
function secretModel(sentinel: string) {
  const answer = (context: Context) => {
    const done = context.messages.filter((m) => m.role === "toolResult").length;
    if (done >= 2) return fauxAssistantMessage(`${sentinel}-final after ${done} lookups`);
    return fauxAssistantMessage([fauxToolCall("lookup", { q: `${sentinel}-args-${done}` }, { id: `l${done}` })], {
      stopReason: "toolUse",
    });
  };
  return fauxModel(Array.from({ length: 12 }, () => answer));
}

const untilApprovalPending = (handle: AgentRunHandle, toolCallId: string) =>
  stateWhen(handle, (s) => s.pendingApprovals.some((a) => a.toolCallId === toolCallId), `${toolCallId} to ask`, 60_000);

function cli(script: string, args: string[], keys: string) {
  const run = spawnSync(process.execPath, [...nodeEntry(path.join(root, "src/cli", script)), ...args], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: "", JAI_CODEC_KEYS: keys },
    encoding: "utf8",
    timeout: 120000,
  });
  return { code: run.status, out: `${run.stdout}\n${run.stderr}` };
}

describe("the codec end to end", () => {
  it("tools, approvals, steering, continue-as-new and a second worker's cache miss: no plaintext in history, the run and the readers work", async () => {
    const sentinel = `SNTL${Date.now().toString(36)}`;
    // The steer lands while the approved call runs: sent while the model is asked instead, it would (rightly) skip
    // the call that answer asks for, and there would be no second call to deny.
    const steered = deferred();
    const tool = secretTool(sentinel, steered.promise);
    const faux = secretModel(sentinel);
    const dataConverter = converter(KEY_A);
    const first = await testWorker(env, [tool], { dataConverter });
    const handle = await startAgentRun(clientA, {
      taskQueue: first.taskQueue,
      workflowId: uniqueId("codec-core"),
      model: faux.getModel(),
      systemPrompt: `${sentinel}-system`,
      prompt: `${sentinel}-prompt: look it up`,
      continueAsNew: { afterTurns: 2 },
    });
    // Worker 1 serves the first turn and stops while the first call waits for approval.
    await first.worker.runUntil(() => untilApprovalPending(handle, "l0"));
    // Worker 2 has an empty context cache: its next model call reads the context by query, through the codec.
    const second = await testWorker(env, [tool], { dataConverter, taskQueue: first.taskQueue });
    const result = await second.worker.runUntil(async () => {
      await handle.approve("l0");
      await handle.steer(`${sentinel}-steer`);
      steered.resolve();
      await untilApprovalPending(handle, "l1");
      await handle.deny("l1", `${sentinel}-deny-reason`).catch(() => undefined);
      return within(handle.result(), 60000, "result");
    });
    expect(result.stopReason).toBe("stop");
    expect(JSON.stringify(result.messages)).toContain(`${sentinel}-final`);

    const events = await rawChain(handle.workflowId);
    expect(events).toContainEqual(
      expect.objectContaining({ workflowExecutionContinuedAsNewEventAttributes: expect.anything() }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({ workflowExecutionUpdateAcceptedEventAttributes: expect.anything() }),
    );
    const leaks = events.filter((e) => eventBytes(e).includes(sentinel)).map((e) => `${e.eventId} ${e.eventType}`);
    expect(leaks).toEqual([]);
    expect([...keyIds(events)]).toEqual(["A"]);

    // Readers with the codec see it all: the closed-run view (history decoding) and the transcript.
    const view = await closedRunView(clientA, handle.workflowId);
    const text = JSON.stringify(view.transcript);
    for (const part of ["prompt", "args-0", "result", "details", "steer", "deny-reason", "final"])
      expect(text).toContain(`${sentinel}-${part}`);
    // A reader without the key cannot: the payloads are ciphertext to it.
    await expect(closedRunView(env.client, handle.workflowId)).rejects.toThrow(/binary\/encrypted|Unknown encoding/);
  }, 180000);

  it("key rotation: a run started under key A finishes on a worker with [B current, A old]; show and replay read both", async () => {
    const sentinel = `ROT${Date.now().toString(36)}`;
    const tool = secretTool(sentinel);
    const faux = secretModel(sentinel);
    const first = await testWorker(env, [tool], { dataConverter: converter(KEY_A) });
    const handle = await startAgentRun(clientA, {
      taskQueue: first.taskQueue,
      workflowId: uniqueId("codec-rotate"),
      model: faux.getModel(),
      prompt: `${sentinel}-prompt`,
    });
    await first.worker.runUntil(() => untilApprovalPending(handle, "l0"));
    // Rotated: the worker and the client now write with B and still read A.
    const rotated = `${KEY_B},${KEY_A}`;
    const clientBA = new Client({ connection: env.client.connection, dataConverter: converter(rotated) });
    const second = await testWorker(env, [tool], { dataConverter: converter(rotated), taskQueue: first.taskQueue });
    const rotatedHandle = getAgentRun(clientBA, handle.workflowId);
    const result = await second.worker.runUntil(async () => {
      await rotatedHandle.approve("l0");
      await untilApprovalPending(rotatedHandle, "l1");
      await rotatedHandle.approve("l1");
      return within(rotatedHandle.result(), 60000, "result");
    });
    expect(result.stopReason).toBe("stop");
    const events = await rawChain(handle.workflowId);
    expect([...keyIds(events)].sort()).toEqual(["A", "B"]);
    expect(events.filter((e) => eventBytes(e).includes(sentinel))).toEqual([]);

    const show = cli("show.ts", [handle.workflowId, "--address", process.env.TEMPORAL_ADDRESS!], rotated);
    expect(show.code).toBe(0);
    expect(show.out).toContain(`${sentinel}-prompt`); // written under A
    expect(show.out).toContain(`${sentinel}-final`); // written under B
    const replay = cli("replay.ts", [handle.workflowId, "--address", process.env.TEMPORAL_ADDRESS!], rotated);
    expect(replay.out).toMatch(/deterministic/);
    expect(replay.code).toBe(0);
    // A history file (as `temporal workflow show -o json` exports it, still encrypted) replays with the keys;
    // without them it is "nothing to judge" naming the keys, never a false divergence.
    const file = path.join(mkdtempSync(path.join(os.tmpdir(), "codec-replay-")), "history.json");
    writeFileSync(file, historyToJSON(await env.client.workflow.getHandle(handle.workflowId).fetchHistory()));
    const fromFile = cli("replay.ts", ["--file", file], rotated);
    expect(fromFile.out).toMatch(/deterministic/);
    expect(cli("replay.ts", ["--file", file], "").out).toMatch(
      /its payloads are encrypted \(key "A", "B"\): set JAI_CODEC_KEYS/,
    );
    const lacking = cli("replay.ts", ["--file", file], KEY_B);
    expect(lacking.code).toBe(2);
    expect(lacking.out).toMatch(/cannot decrypt it: payload encrypted with key "A"/);
    // With only the new key, show names the old key it lacks.
    const onlyB = cli("show.ts", [handle.workflowId, "--address", process.env.TEMPORAL_ADDRESS!], KEY_B);
    expect(onlyB.code).toBe(1);
    expect(onlyB.out).toMatch(/key "A", which this process does not have \(loaded: B\)/);
  }, 240000);

  it("a worker without the run's key: the workflow task fails naming the key (no garbage, no silent hang); the run goes on once a worker has it", async () => {
    const sentinel = `MISS${Date.now().toString(36)}`;
    const faux = fauxModel([fauxAssistantMessage(`${sentinel}-final`)]);
    const keyErrors: CodecKeyError[] = [];
    const onlyB = {
      payloadCodecs: [
        new AesGcmCodec({ keys: parseCodecKeys(KEY_B, "test"), onKeyError: (e) => void keyErrors.push(e) }),
      ],
    };
    const lacking = await testWorker(env, [], { dataConverter: onlyB });
    const handle = await startAgentRun(clientA, {
      taskQueue: lacking.taskQueue,
      workflowId: uniqueId("codec-missing"),
      model: faux.getModel(),
      prompt: `${sentinel}-prompt`,
      workflowTaskTimeout: "2s",
    });
    let failed: Event | undefined;
    const history = env.client.workflow.getHandle(handle.workflowId);
    await lacking.worker.runUntil(
      waitFor(
        async () =>
          !!(failed = (await history.fetchHistory()).events?.find((e) => e.workflowTaskFailedEventAttributes)),
        60_000,
        "the failed workflow task",
      ),
    );
    const failure = failed!.workflowTaskFailedEventAttributes!.failure!;
    // The failure went through the worker's codec (key B, which it has): sealed in history, readable with B.
    expect(failure.message).toBe("Encoded failure");
    const [opened] = (
      await decodeHistory(
        { events: [{ workflowTaskFailedEventAttributes: { failure } }] },
        {
          ...clientA.options.loadedDataConverter,
          payloadCodecs: onlyB.payloadCodecs,
        },
      )
    ).events!;
    expect(opened.workflowTaskFailedEventAttributes!.failure!.message).toMatch(
      /key "A", which this process does not have \(loaded: B\)/,
    );
    expect(keyErrors[0]).toBeInstanceOf(CodecKeyError);
    expect(keyErrors[0].keyId).toBe("A");
    expect(keyErrors[0].reason).toBe("missing-key");
    // A worker that has the key takes the retried task: the run was never lost.
    const withKey = await testWorker(env, [], {
      dataConverter: converter(`${KEY_B},${KEY_A}`),
      taskQueue: lacking.taskQueue,
    });
    const clientBA = new Client({ connection: env.client.connection, dataConverter: converter(`${KEY_B},${KEY_A}`) });
    const result = await withKey.worker.runUntil(() =>
      within(clientBA.workflow.getHandle(handle.workflowId).result(), 60000, "result"),
    );
    expect(result.stopReason).toBe("stop");
  }, 120000);
});
