/** Completion webhooks: one signed delivery per run however it ends, retries, URL and secret rules. Real server, faux model. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHmac } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { InvalidRunInputError, startAgentRun } from "../src/client.js";
import type { AgentTool } from "../src/types.js";
import type { RunOutcome } from "../src/webhooks/deliver.js";
import { checkWebhookUrl, isPrivateAddress } from "../src/webhooks/target.js";
import { deferred, fauxModel, openTestEnv, testWorker, uniqueId, within, type TestEnv } from "./helpers.js";

let env: TestEnv;
let receiver: Server;
let url: string;
interface Delivery {
  status: number;
  body: string;
  signature: string;
  deliveryId: string;
}
const deliveries: Delivery[] = [];
/** Workflow ids whose first deliveries are answered 503, and how many. */
const failFirst = new Map<string, number>();
const SECRET = "webhook-secret-value";

beforeAll(async () => {
  env = await openTestEnv();
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const id = (JSON.parse(body) as RunOutcome).workflowId;
      const left = failFirst.get(id) ?? 0;
      const status = left > 0 ? 503 : 204;
      if (left > 0) failFirst.set(id, left - 1);
      deliveries.push({
        status,
        body,
        signature: String(req.headers["x-jai-signature"]),
        deliveryId: String(req.headers["x-jai-delivery"]),
      });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
  await env?.close();
});

const webhook = () => ({ url, secretName: "ci-hook" });
const workerOptions = { webhooks: { secrets: { "ci-hook": SECRET }, allowPrivateHosts: true } };
const of = (workflowId: string) =>
  deliveries.filter((d) => (JSON.parse(d.body) as RunOutcome).workflowId === workflowId);

/** The one accepted delivery of a run, checked for its signature. */
function accepted(workflowId: string): RunOutcome {
  const ok = of(workflowId).filter((d) => d.status === 204);
  expect(ok).toHaveLength(1);
  const expected = `sha256=${createHmac("sha256", SECRET).update(ok[0].body).digest("hex")}`;
  expect(ok[0].signature).toBe(expected);
  return JSON.parse(ok[0].body) as RunOutcome;
}

describe("completion webhooks", () => {
  it("one signed delivery per run: completed (through two 503s), failed and cancelled", async () => {
    const started = deferred();
    const block: AgentTool = {
      name: "block",
      description: "Blocks until cancelled",
      parameters: Type.Object({}),
      execute: (_id, _args, signal) =>
        new Promise((_, reject) => {
          started.resolve();
          signal?.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
        }),
    };
    const { worker, taskQueue } = await testWorker(env, [block], workerOptions);
    const okId = uniqueId("hook-ok");
    const failedId = uniqueId("hook-failed");
    const cancelledId = uniqueId("hook-cancelled");
    failFirst.set(okId, 2);
    const answer = fauxModel([fauxAssistantMessage("all done")]);
    const blocking = fauxModel([fauxAssistantMessage([fauxToolCall("block", {})], { stopReason: "toolUse" })]);
    await worker.runUntil(async () => {
      const ok = await startAgentRun(env.client, {
        taskQueue,
        workflowId: okId,
        model: answer.getModel(),
        prompt: "hi",
        webhook: webhook(),
      });
      // An unknown model fails the run at setup: the workflow fails.
      const failed = await startAgentRun(env.client, {
        taskQueue,
        workflowId: failedId,
        model: "faux/no-such-model",
        prompt: "hi",
        webhook: webhook(),
      });
      const cancelled = await startAgentRun(env.client, {
        taskQueue,
        workflowId: cancelledId,
        model: blocking.getModel(),
        prompt: "hi",
        webhook: webhook(),
      });
      await within(started.promise, 30_000, "the blocking tool to start");
      await cancelled.cancel();
      await within(
        Promise.all([ok.result(), failed.result().catch((e: unknown) => e), cancelled.result()]),
        60_000,
        "the runs to end",
      );
    });

    const okOutcome = accepted(okId);
    expect(of(okId).map((d) => d.status)).toEqual([503, 503, 204]);
    expect(new Set(of(okId).map((d) => d.deliveryId)).size).toBe(1);
    expect(okOutcome).toMatchObject({
      workflowId: okId,
      status: "completed",
      stopReason: "stop",
      finalText: "all done",
      turns: 1,
    });
    expect(okOutcome.usage.totalTokens).toBeGreaterThan(0);

    const failedOutcome = accepted(failedId);
    expect(failedOutcome).toMatchObject({ workflowId: failedId, status: "failed", stopReason: "error" });
    expect(failedOutcome.errorMessage).toMatch(/unknown model/);
    expect((await env.client.workflow.getHandle(failedId).describe()).status.name).toBe("FAILED");

    expect(accepted(cancelledId)).toMatchObject({
      workflowId: cancelledId,
      status: "cancelled",
      stopReason: "aborted",
    });

    // The secret never enters history: only its name does.
    const raw = JSON.stringify(await env.client.workflow.getHandle(okId).fetchHistory());
    // Payloads are base64 in the history's JSON: decode them to search their text.
    const history =
      raw +
      [...raw.matchAll(/"data":"([A-Za-z0-9+/=]+)"/g)]
        .map((m) => Buffer.from(m[1], "base64").toString("utf8"))
        .join("\n");
    expect(history).not.toContain(SECRET);
    expect(history).toContain("ci-hook");
  });

  it("a loopback URL is refused unless the worker allows private hosts; the run's outcome stands", async () => {
    const { worker, taskQueue } = await testWorker(env, [], { webhooks: { secrets: { "ci-hook": SECRET } } });
    const workflowId = uniqueId("hook-refused");
    const faux = fauxModel([fauxAssistantMessage("fine")]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "hi",
      webhook: webhook(),
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(of(workflowId)).toHaveLength(0);
    const history = JSON.stringify(await handle.workflow.fetchHistory());
    expect(history).toContain("WebhookUrlRefused");
  });

  it("checks URLs: http(s) only, private and loopback addresses refused", async () => {
    await expect(
      startAgentRun(env.client, {
        taskQueue: "none",
        model: "faux/x",
        prompt: "hi",
        webhook: { url: "ftp://example.com/x", secretName: "a" },
      }),
    ).rejects.toThrow(new InvalidRunInputError('Invalid run input: "webhook.url" must be an http or https URL'));
    for (const ip of [
      "127.0.0.1",
      "10.1.2.3",
      "192.168.0.1",
      "172.16.5.5",
      "169.254.169.254",
      "::1",
      "fd00::1",
      "::ffff:127.0.0.1",
      "0.0.0.0",
    ])
      expect(isPrivateAddress(ip)).toBe(true);
    for (const ip of ["8.8.8.8", "172.32.0.1", "2606:4700::1111"]) expect(isPrivateAddress(ip)).toBe(false);
    expect(await checkWebhookUrl("http://127.0.0.1:9/x", false)).toMatch(/private or loopback address 127\.0\.0\.1/);
    expect(await checkWebhookUrl("http://[::1]:9/x", false)).toMatch(/loopback/);
    expect(await checkWebhookUrl("http://127.0.0.1:9/x", true)).toBeUndefined();
  });
});
