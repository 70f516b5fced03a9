/** Completion webhooks: one signed delivery per run however it ends, retries, URL and secret rules. Real server, faux model. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { createHmac } from "node:crypto";
import { lookup as dnsLookup } from "node:dns/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { InvalidRunInputError, startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import type { RunOutcome } from "../../src/worker/webhooks/deliver.js";
import { checkWebhookUrl, isPrivateAddress } from "../../src/worker/webhooks/target.js";
import { deferred, fauxModel, openTestEnv, testWorker, uniqueId, within, type TestEnv } from "../support/helpers.js";

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
/** The worker's secret, bound to the receiver's origin. */
const ciHook = () => ({ "ci-hook": { secret: SECRET, origins: [new URL(url).origin] } });
const workerOptions = () => ({ webhooks: { secrets: ciHook(), allowPrivateHosts: true } });
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
    const { worker, taskQueue } = await testWorker(env, [block], workerOptions());
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

  it("a typed run's delivery carries its output; one that failed its typed answer carries its turns and reason", async () => {
    const { worker, taskQueue } = await testWorker(env, [], workerOptions());
    const typedId = uniqueId("hook-typed");
    const wrongId = uniqueId("hook-typed-wrong");
    const schema = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };
    const right = fauxModel([
      fauxAssistantMessage([fauxToolCall("final_answer", { city: "Lisbon" })], { stopReason: "toolUse" }),
    ]);
    const wrong = fauxModel([
      fauxAssistantMessage([fauxToolCall("final_answer", { town: "Lisbon" })], { stopReason: "toolUse" }),
    ]);
    await worker.runUntil(async () => {
      const typed = await startAgentRun(env.client, {
        taskQueue,
        workflowId: typedId,
        model: right.getModel(),
        prompt: "where?",
        output: schema as never,
        webhook: webhook(),
      });
      const failed = await startAgentRun(env.client, {
        taskQueue,
        workflowId: wrongId,
        model: wrong.getModel(),
        prompt: "where?",
        output: schema as never,
        outputRetries: 0,
        webhook: webhook(),
      });
      await within(Promise.all([typed.result(), failed.result().catch((e: unknown) => e)]), 60_000, "the runs to end");
    });
    expect(accepted(typedId)).toMatchObject({ status: "completed", stopReason: "stop", output: { city: "Lisbon" } });
    const failed = accepted(wrongId);
    expect(failed).toMatchObject({ status: "failed", stopReason: "error", turns: 1 });
    expect(failed.errorMessage).toMatch(/^Typed output: no valid final answer after 1 attempt/);
    expect(failed.usage.totalTokens).toBeGreaterThan(0);
  });

  it("a loopback URL is refused unless the worker allows private hosts; the run's outcome stands", async () => {
    const { worker, taskQueue } = await testWorker(env, [], { webhooks: { secrets: ciHook() } });
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

  it("no spelling of a loopback address, and no name resolving inside, gets past the guard: a listener there receives nothing", async () => {
    // The attacker's target: a listener on loopback only, which the worker must never reach.
    const trap = await listener();
    const port = trap.port;
    const forms = [
      `http://[::ffff:127.0.0.1]:${port}/hook`,
      `http://[::ffff:7f00:1]:${port}/hook`,
      `http://2130706433:${port}/hook`,
      `http://0x7f000001:${port}/hook`,
      `http://0x7f.1:${port}/hook`,
      `http://127.1:${port}/hook`,
      `http://0177.0.0.1:${port}/hook`,
      `http://[64:ff9b::7f00:1]:${port}/hook`,
      `http://0.0.0.0:${port}/hook`,
      `http://[::]:${port}/hook`,
      `http://localhost:${port}/hook`,
      `http://app.localhost:${port}/hook`,
      `http://inside.test:${port}/hook`,
      `http://mixed.test:${port}/hook`,
    ];
    // The worker holds a secret for every one of these origins (from its environment): only the address guard stands.
    process.env.JAI_WEBHOOK_SECRET_TRAP = SECRET;
    process.env.JAI_WEBHOOK_ORIGINS_TRAP = forms.map((f) => new URL(f).origin).join(",");
    const resolve = async (host: string) =>
      host === "inside.test"
        ? [{ address: "127.0.0.1", family: 4 }]
        : host === "mixed.test"
          ? [
              { address: "8.8.8.8", family: 4 },
              { address: "127.0.0.1", family: 4 },
            ]
          : dnsLookup(host, { all: true });
    try {
      const { worker, taskQueue } = await testWorker(env, [], { webhooks: { resolve } });
      const faux = fauxModel(forms.map(() => fauxAssistantMessage("fine")));
      const handles: AgentRunHandle[] = [];
      await worker.runUntil(async () => {
        for (const form of forms)
          handles.push(
            await startAgentRun(env.client, {
              taskQueue,
              workflowId: uniqueId("hook-trap"),
              model: faux.getModel(),
              prompt: "hi",
              webhook: { url: form, secretName: "trap" },
            }),
          );
        // Done when every run has ended, or as soon as the trap is reached.
        await within(
          Promise.race([Promise.all(handles.map((h) => h.result())), trap.reached]),
          90_000,
          "the runs to end",
        );
      });
      expect(trap.requests).toEqual([]);
      const refused: string[] = [];
      for (const [i, handle] of handles.entries())
        if (JSON.stringify(await handle.workflow.fetchHistory()).includes("WebhookUrlRefused")) refused.push(forms[i]);
      expect(refused).toEqual(forms);
    } finally {
      delete process.env.JAI_WEBHOOK_SECRET_TRAP;
      delete process.env.JAI_WEBHOOK_ORIGINS_TRAP;
      await trap.close();
    }
  }, 120_000);

  it("connects to the address the check resolved, once: no second lookup to rebind", async () => {
    const lookups: string[] = [];
    const resolve = async (host: string) => {
      lookups.push(host);
      // A name the system resolver does not know: only this answer can lead the socket to the receiver.
      return host === "receiver.test" ? [{ address: "127.0.0.1", family: 4 }] : dnsLookup(host, { all: true });
    };
    const named = url.replace("127.0.0.1", "receiver.test");
    const { worker, taskQueue } = await testWorker(env, [], {
      webhooks: {
        secrets: { "ci-hook": { secret: SECRET, origins: [new URL(named).origin] } },
        allowPrivateHosts: true,
        resolve,
      },
    });
    const workflowId = uniqueId("hook-pinned");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: fauxModel([fauxAssistantMessage("pinned")]).getModel(),
      prompt: "hi",
      webhook: { url: named, secretName: "ci-hook" },
    });
    await worker.runUntil(within(handle.result(), 60_000, "the run to end"));
    expect(accepted(workflowId)).toMatchObject({ workflowId, finalText: "pinned" });
    expect(lookups).toEqual(["receiver.test"]);
  }, 90_000);

  it("a run naming a secret the worker holds for another receiver gets no signature under it", async () => {
    const BILLING = "billing-secret-value";
    const PARTNER = "partner-secret-value";
    // In the worker's environment with no origins of its own, and in its config bound to another origin.
    process.env.JAI_WEBHOOK_SECRET_BILLING = BILLING;
    const secrets = { ...ciHook(), partner: { secret: PARTNER, origins: ["https://partner.example.com"] } };
    try {
      const { worker, taskQueue } = await testWorker(env, [], { webhooks: { secrets, allowPrivateHosts: true } });
      const faux = fauxModel([1, 2, 3].map(() => fauxAssistantMessage("attacker-chosen text")));
      const start = (secretName: string) =>
        startAgentRun(env.client, {
          taskQueue,
          workflowId: uniqueId(`hook-${secretName}`),
          model: faux.getModel(),
          prompt: "hi",
          webhook: { url, secretName },
        });
      const [billing, partner, own] = await Promise.all([start("billing"), start("partner"), start("ci-hook")]);
      const attacks = [billing, partner];
      const attackDelivered = new Promise<void>((resolve) => {
        const timer = setInterval(() => {
          if (attacks.some((h) => of(h.workflowId).length)) resolve();
        }, 50);
        void Promise.all(attacks.map((h) => h.result())).finally(() => clearInterval(timer));
      });
      await worker.runUntil(
        within(
          Promise.race([Promise.all([billing, partner, own].map((h) => h.result())), attackDelivered]),
          60_000,
          "the runs to end",
        ),
      );
      // The receiver tries every secret the worker holds: no delivery of the attacking runs verifies under any.
      for (const h of attacks) {
        const signedBy = of(h.workflowId).flatMap((d) =>
          Object.entries({ SECRET, BILLING, PARTNER }).flatMap(([name, key]) =>
            d.signature === `sha256=${createHmac("sha256", key).update(d.body).digest("hex")}` ? [name] : [],
          ),
        );
        expect(signedBy).toEqual([]);
        expect(of(h.workflowId)).toHaveLength(0);
        expect(JSON.stringify(await h.workflow.fetchHistory())).toContain("WebhookSecretMissing");
      }
      // The secret bound to this receiver still signs for it.
      expect(accepted(own.workflowId)).toMatchObject({ workflowId: own.workflowId, status: "completed" });
    } finally {
      delete process.env.JAI_WEBHOOK_SECRET_BILLING;
    }
  }, 90_000);
});

/** A loopback listener recording every request it gets; `reached` resolves on the first. */
async function listener() {
  const requests: { url?: string; headers: IncomingHttpHeaders }[] = [];
  const hit = deferred();
  const server = createServer((req, res) => {
    requests.push({ url: req.url, headers: req.headers });
    hit.resolve();
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    reached: hit.promise,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
