/**
 * Live events on one machine with no setup (docs/streaming.md, "One machine"), and watch's first answer for a run
 * no tap holds:
 * - a library worker's run server writes its URL and token to a runtime file only its user can read; a client of
 *   the same user finds the URL in the run's history and takes the token from the file: token deltas arrive with
 *   no JAI_HTTP_TOKEN or JAI_EVENTS_TRUSTED_HOSTS set;
 * - from the attacker's side: a runtime file others may read is ignored, and a URL in history that no runtime
 *   file names gets no token;
 * - a run whose worker serves no events is read from history as soon as its first workflow task is recorded,
 *   not after the 10 s discovery wait (counted in history reads, not timed).
 */
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import { EVENTS_IDENTITY_MARK } from "../../src/client/events/subscribe.js";
import type { AgentEvent } from "../../src/shared/contracts.js";
import { fauxModel, stateWhen, testWorker, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();
let dir: string;
const before = process.env.JAI_RUNTIME_DIR;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "jai-runtime-"));
  chmodSync(dir, 0o700);
  process.env.JAI_RUNTIME_DIR = dir;
});
afterAll(() => {
  process.env.JAI_RUNTIME_DIR = before;
  rmSync(dir, { recursive: true, force: true });
});

async function follow(workflowId: string): Promise<AgentEvent[]> {
  const got: AgentEvent[] = [];
  for await (const { event } of getAgentRun(env.client, workflowId).events()) got.push(event);
  return got;
}

/** A session run waiting for its next prompt, served by a worker with default events (a minted token). */
async function waitingRun(extra = {}) {
  const { worker, taskQueue } = await testWorker(env, [], extra);
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("one-machine"),
    model: fauxModel([fauxAssistantMessage("Streamed in several words, token by token.")]).getModel(),
    prompt: "Hi",
    session: true,
  });
  return { worker, handle };
}

describe("live events on one machine", () => {
  it("a client of the same user gets the worker's token from its runtime file: token deltas, no setup", async () => {
    delete process.env.JAI_HTTP_TOKEN;
    delete process.env.JAI_EVENTS_TRUSTED_HOSTS;
    const { worker, handle } = await waitingRun();
    await worker.runUntil(async () => {
      await stateWhen(handle, (s) => s.status === "waiting_for_prompt", "the first answer");
      expect(readdirSync(dir).filter((f) => f.startsWith("run-server-"))).toHaveLength(1);
      const events = follow(handle.workflowId);
      await handle.close();
      expect((await events).some((e) => e.type === "message_update")).toBe(true);
    });
    // Closed with its worker: the file is gone.
    expect(readdirSync(dir).filter((f) => f.startsWith("run-server-"))).toEqual([]);
  });

  it("a runtime file others may read is ignored: no token, the run is read from history", async () => {
    const { worker, handle } = await waitingRun();
    await worker.runUntil(async () => {
      await stateWhen(handle, (s) => s.status === "waiting_for_prompt", "the first answer");
      for (const f of readdirSync(dir)) chmodSync(path.join(dir, f), 0o644);
      const events = follow(handle.workflowId);
      await handle.close();
      const got = await events;
      expect(got.some((e) => e.type === "message_update")).toBe(false);
      expect(got.map((e) => e.type)).toContain("agent_end");
    });
  });

  it("a URL in history that no runtime file names gets no token, while this user's own server has a file", async () => {
    const requests: IncomingHttpHeaders[] = [];
    const forged = createServer((req, res) => {
      requests.push(req.headers);
      res.writeHead(401).end();
    });
    await new Promise<void>((resolve) => forged.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(forged.address() as AddressInfo).port}`;
    // This user's own worker (its runtime file is in the directory) serves another run meanwhile.
    const own = await waitingRun();
    const { worker, handle } = await waitingRun({
      events: false,
      workerOptions: { identity: `x${EVENTS_IDENTITY_MARK}${url}` },
    });
    try {
      await own.worker.runUntil(
        worker.runUntil(async () => {
          await stateWhen(handle, (s) => s.status === "waiting_for_prompt", "the first answer");
          expect(readdirSync(dir).some((f) => f.startsWith("run-server-"))).toBe(true);
          const events = follow(handle.workflowId);
          await handle.close();
          await own.handle.close();
          await events;
        }),
      );
      expect(requests.length).toBeGreaterThan(0);
      expect(requests.every((h) => h.authorization === undefined)).toBe(true);
    } finally {
      forged.closeAllConnections();
      forged.close();
    }
  });
});

describe("watch's first answer", () => {
  it("a run whose worker serves no events is read from history once its first task is recorded", async () => {
    const { worker, handle } = await waitingRun({ events: false });
    const service = env.client.workflowService as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    const reverse = service.getWorkflowExecutionHistoryReverse.bind(service);
    let reads = 0;
    service.getWorkflowExecutionHistoryReverse = (...args) => {
      reads++;
      return reverse(...args);
    };
    try {
      await worker.runUntil(async () => {
        await stateWhen(handle, (s) => s.status === "waiting_for_prompt", "the first answer");
        const iterator = getAgentRun(env.client, handle.workflowId).events()[Symbol.asyncIterator]();
        const first = await iterator.next();
        expect(first.value?.event.type).toBe("agent_start");
        // One look at history found a worker that announces no events server: no 50 looks, 200 ms apart.
        expect(reads).toBe(1);
        await iterator.return?.(undefined);
        await handle.close();
      });
    } finally {
      service.getWorkflowExecutionHistoryReverse = reverse;
    }
  });
});
