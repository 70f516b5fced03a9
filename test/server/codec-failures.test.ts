/**
 * Encryption covers failures (security issue 36, row 6): with the codec on, a
 * provider's error text (which can quote the request) and a tool's thrown
 * error reach history only encrypted: not in a failure's message or stack
 * trace, nor anywhere else a reader without the keys can see (events, memo,
 * search attributes, headers, the run's description). Readers with the keys
 * read them: the loop itself (it classifies failures by type and message), the
 * client, the history story (`show`) and the history decoder.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Client, WorkflowFailedError } from "@temporalio/client";
import proto from "@temporalio/proto";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { AesGcmCodec } from "../../src/node/codec/aes-gcm.js";
import {
  bundleEncryptsFailures,
  dataConverterFromEnv,
  ENCRYPTED_FAILURES_PATH,
  parseCodecKeys,
  withEncryptedFailures,
} from "../../src/node/codec/config.js";
import { decodeHistory } from "../../src/node/codec/history.js";
import { readStory } from "../../src/client/history-view.js";
import { AgentPlugin } from "../../src/worker/plugin.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxModel, openTestEnv, testWorker, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { sharedBundle } from "../support/bundles.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const KEY_A = "A:" + Buffer.alloc(32, 7).toString("base64");
const codecOnly = () => ({ payloadCodecs: [new AesGcmCodec({ keys: parseCodecKeys(KEY_A, "test") })] });

let env: TestEnv;
let clientA: Client;
let encryptedBundle: { code: string };
beforeAll(async () => {
  env = await openTestEnv();
  // As a user passes it: payload codecs only; the client and the worker complete it themselves.
  clientA = new Client({ connection: env.client.connection, dataConverter: withEncryptedFailures(codecOnly()) });
  encryptedBundle = await sharedBundle("encrypted-failures");
}, 120000);
afterAll(async () => {
  await env?.close();
});

const eventBytes = (e: Event) => Buffer.from(proto.temporal.api.history.v1.HistoryEvent.encode(e).finish());

/** Every failure in an event, causes included. */
function failuresOf(value: unknown, out: proto.temporal.api.failure.v1.IFailure[] = []) {
  if (typeof value !== "object" || value === null || value instanceof Uint8Array) return out;
  for (const [key, child] of Object.entries(value)) {
    if ((key === "failure" || key === "cause" || key === "lastFailure") && child && typeof child === "object")
      out.push(child as proto.temporal.api.failure.v1.IFailure);
    failuresOf(child, out);
  }
  return out;
}

describe("failures under the codec", () => {
  it("a provider error and a tool error quoting a sentinel: no event holds it without the keys; the loop, the client and show read it with them", async () => {
    const sentinel = `FAILSNTL${Date.now().toString(36)}`;
    const tool: AgentTool = {
      name: "leaky",
      description: "fails quoting its argument",
      parameters: Type.Object({ q: Type.String() }),
      async execute(_id, args: any) {
        throw new Error(`${sentinel}-tool-error quoting ${args.q}`);
      },
    };
    // The provider fails twice (both attempts the run allows) with a retryable error quoting the request.
    const providerError = () =>
      fauxAssistantMessage([], {
        stopReason: "error",
        errorMessage: `${sentinel}-provider-error: service unavailable, upstream said "${sentinel}-request-quote"`,
      });
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("leaky", { q: `${sentinel}-args` }, { id: "t0" })], { stopReason: "toolUse" }),
      providerError,
      providerError,
    ]);
    const { worker, taskQueue } = await testWorker(env, [tool], {
      dataConverter: codecOnly(),
      workflowBundle: encryptedBundle,
    });
    const workflowId = uniqueId("codec-failures");
    const handle = await startAgentRun(clientA, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: `${sentinel}-prompt: call leaky`,
      modelActivity: { retry: { maximumAttempts: 2, initialInterval: "50ms" } },
    });
    const result = await worker.runUntil(() => within(handle.result(), 60000, "result"));

    // The loop read the activity's failure (decoded by the SDK before the workflow saw it) into its error message.
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toMatch(new RegExp(`^Model call failed: .*unavailable.*${sentinel}-provider-error`));
    expect(JSON.stringify(result.messages)).toContain(`${sentinel}-tool-error quoting ${sentinel}-args`);

    // The attacker's side: the raw history and the run's description, read without keys.
    const raw = await env.client.workflow.getHandle(workflowId).fetchHistory();
    const events = raw.events ?? [];
    const activityFailed = events.find((e) => e.activityTaskFailedEventAttributes);
    const runFailed = events.find((e) => e.workflowExecutionFailedEventAttributes);
    expect(activityFailed).toBeDefined();
    expect(runFailed).toBeDefined();
    const sealed = [...failuresOf(activityFailed), ...failuresOf(runFailed)];
    expect(sealed.length).toBeGreaterThanOrEqual(2);
    for (const failure of sealed) {
      expect(failure.message).toBe("Encoded failure");
      expect(failure.stackTrace ?? "").toBe("");
      expect(Buffer.from(failure.encodedAttributes!.metadata!.encoding!).toString()).toBe("binary/encrypted");
    }
    const leaks = events
      .filter((e) => eventBytes(e).includes(sentinel) || JSON.stringify(e).includes(sentinel))
      .map((e) => `${e.eventId} ${e.eventType}`);
    expect(leaks).toEqual([]);
    const description = await env.client.workflowService.describeWorkflowExecution({
      namespace: "default",
      execution: { workflowId },
    });
    const described =
      proto.temporal.api.workflowservice.v1.DescribeWorkflowExecutionResponse.encode(description).finish();
    expect(Buffer.from(described).includes(sentinel)).toBe(false);

    // With the keys: the client's error, the decoded history (message and stack trace back) and the story.
    const err = await clientA.workflow
      .getHandle(workflowId)
      .result()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause?.message).toContain(`${sentinel}-provider-error`);
    const decoded = await decodeHistory(
      await env.client.workflow.getHandle(workflowId).fetchHistory(),
      clientA.options.loadedDataConverter,
    );
    const activityFailure = decoded.events!.find((e) => e.activityTaskFailedEventAttributes)!
      .activityTaskFailedEventAttributes!.failure!;
    expect(activityFailure.message).toContain(`${sentinel}-provider-error`);
    expect(activityFailure.stackTrace).toContain(`${sentinel}-provider-error`);
    expect(activityFailure.applicationFailureInfo?.type).toBe("ModelUnavailable");
    const story = await readStory(clientA, workflowId);
    expect(story.failure).toContain(`${sentinel}-provider-error`);
    expect(story.items).toContainEqual(
      expect.objectContaining({ kind: "failure", message: expect.stringContaining(`${sentinel}-request-quote`) }),
    );
  }, 120000);

  it("a codec turns failure encryption on everywhere a data converter is built, and nowhere else", async () => {
    const codec = codecOnly();
    expect(withEncryptedFailures(codec).failureConverterPath).toBe(ENCRYPTED_FAILURES_PATH);
    expect(withEncryptedFailures(undefined)).toBeUndefined();
    expect(withEncryptedFailures({})).toEqual({});
    // A failure converter of the caller's own is kept.
    expect(withEncryptedFailures({ ...codec, failureConverterPath: "/theirs.js" }).failureConverterPath).toBe(
      "/theirs.js",
    );
    expect(dataConverterFromEnv({ JAI_CODEC_KEYS: KEY_A })?.failureConverterPath).toBe(ENCRYPTED_FAILURES_PATH);
    // The plugin completes the worker's, the client's and the replayer's converters.
    const plugin = new AgentPlugin({ events: false });
    const options = await plugin.configureWorker({ connection: env.connection, taskQueue: "tq", dataConverter: codec });
    expect(options.dataConverter?.failureConverterPath).toBe(ENCRYPTED_FAILURES_PATH);
    expect(plugin.configureClient({ dataConverter: codec }).dataConverter?.failureConverterPath).toBe(
      ENCRYPTED_FAILURES_PATH,
    );
    expect(plugin.configureReplayWorker({ dataConverter: codec }).dataConverter?.failureConverterPath).toBe(
      ENCRYPTED_FAILURES_PATH,
    );
    expect(plugin.configureClient({}).dataConverter?.failureConverterPath).toBeUndefined();
    // A prebuilt bundle that would write the workflows' failures in plain text is refused under a codec.
    expect(bundleEncryptsFailures(encryptedBundle)).toBe(true);
    expect(bundleEncryptsFailures(env.bundle)).toBe(false);
    await expect(
      createAgentWorker({
        connection: env.connection,
        taskQueue: uniqueId("tq"),
        workflowBundle: env.bundle,
        dataConverter: codec,
      }),
    ).rejects.toThrow(
      /writes failures in plain text: bundle it with bundleAgentWorkflows\(path, \{ encryptFailures: true \}\)/,
    );
    await expect(
      plugin.configureWorker({
        connection: env.connection,
        taskQueue: "tq",
        dataConverter: codec,
        workflowBundle: env.bundle,
      }),
    ).rejects.toThrow(/writes failures in plain text/);
  });

  it("without a codec, failures stay as they were: plain messages the workflow and readers see directly", async () => {
    const sentinel = `PLAIN${Date.now().toString(36)}`;
    const faux = fauxModel([
      fauxAssistantMessage([], {
        stopReason: "error",
        errorMessage: `${sentinel}-provider-error: service unavailable`,
      }),
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const workflowId = uniqueId("plain-failures");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "hello",
      modelActivity: { retry: { maximumAttempts: 1 } },
    });
    const result = await worker.runUntil(() => within(handle.result(), 60000, "result"));
    expect(result.errorMessage).toContain(`${sentinel}-provider-error`);
    const events = (await env.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
    const failure = events.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!
      .failure!;
    expect(failure.message).toContain(`${sentinel}-provider-error`);
    expect(failure.encodedAttributes).toBeFalsy();
  }, 60000);
});
