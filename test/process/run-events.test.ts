/** handle.events() from another process: the whole onEvent sequence with token deltas, resumed from a cursor, across continue-as-new. */
import { spawn } from "node:child_process";
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxText, fauxToolCall, Type } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { startRunEventsService } from "../../src/worker/events/serve.js";
import { EventTap } from "../../src/worker/events/tap.js";
import type { AgentEvent, AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import { deferred, fauxModel, uniqueId, within, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

const env = withServer();

const echo: AgentTool = {
  name: "echo",
  description: "Echo the text back",
  parameters: Type.Object({ text: Type.String() }),
  requiresApproval: true,
  async execute(_id, args: any, _signal, onUpdate) {
    onUpdate?.({ content: [{ type: "text", text: "half way" }], details: {} });
    return { content: [{ type: "text", text: `echo: ${args.text}` }], details: { length: args.text.length } };
  },
};

interface Line {
  cursor?: string;
  event?: AgentEvent;
  done?: boolean;
}

/** Runs test/support/events-child.ts in its own node process; resolves with its lines once it exits. */
function child(args: string[], onLine?: (line: Line) => void, token?: string): Promise<Line[]> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...nodeEntry("test/support/events-child.ts"), ...args], {
      // handle.events() sends it as a bearer token to a run server found in history only on a trusted host.
      env: { ...process.env, ...(token ? { JAI_HTTP_TOKEN: token, JAI_EVENTS_TRUSTED_HOSTS: "127.0.0.1" } : {}) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const lines: Line[] = [];
    let buffer = "";
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      buffer += chunk.toString();
      let at: number;
      while ((at = buffer.indexOf("\n")) >= 0) {
        const line = JSON.parse(buffer.slice(0, at)) as Line;
        buffer = buffer.slice(at + 1);
        lines.push(line);
        onLine?.(line);
      }
    });
    proc.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    proc.on("error", reject);
    proc.on("exit", (code) => (code === 0 ? resolve(lines) : reject(new Error(`child exited ${code}: ${stderr}`))));
  });
}

const snapshot = (e: AgentEvent) => JSON.parse(JSON.stringify(e)) as AgentEvent;

describe("run events in another process", () => {
  it("delivers what onEvent got, token deltas included, resumed mid-stream from a cursor and across continue-as-new", async () => {
    const faux = fauxModel(
      [
        fauxAssistantMessage(
          [fauxText("Let me echo that for you, word by word."), fauxToolCall("echo", { text: "hello" })],
          { stopReason: "toolUse" },
        ),
        fauxAssistantMessage("The echo said hello, and that is the final answer."),
      ],
      { tokensPerSecond: 40 },
    );
    const seen: AgentEvent[] = [];
    const service = await startRunEventsService({
      client: env.client,
      port: 0,
      onEvent: (e) => void seen.push(snapshot(e)),
    });
    const token = service.server.token!; // minted: no JAI_HTTP_TOKEN here
    const taskQueue = uniqueId("tq");
    const worker = await createAgentWorker({
      connection: env.connection,
      taskQueue,
      tools: [echo],
      workflowBundle: env.bundle,
      onEvent: service.onEvent,
      workerOptions: { identity: service.identity },
    });
    const workflowId = uniqueId("events");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "Echo hello",
      continueAsNew: { afterTurns: 1 },
    });
    const { runId: firstRunId } = await handle.workflow.describe();
    try {
      await worker.runUntil(async () => {
        // First subscriber: leaves after the third token delta, in the middle of the first message.
        const first = await within(child([workflowId, "", "update:3"], undefined, token), 60_000, "first subscriber");
        const last = first.filter((l) => l.cursor).at(-1)!;
        expect(last.event?.type).toBe("message_update");
        // Second: resumes from that cursor; the run waits for approval until it is attached.
        const attached = deferred();
        const rest = child([workflowId, last.cursor!], (line) => line.event && attached.resolve(), token);
        await within(attached.promise, 60_000, "second subscriber attached");
        await within(
          (async () => {
            for (;;) {
              const state = await handle.state();
              if (state.pendingApprovals.length) return handle.approve(state.pendingApprovals[0].toolCallId);
              await new Promise((r) => setTimeout(r, 100)); // polling the run's state, not synchronising on time
            }
          })(),
          60_000,
          "approval",
        );
        const second = await within(rest, 60_000, "second subscriber");
        const received = [...first, ...second].filter((l) => l.event).map((l) => l.event!);
        expect(received.filter((e) => e.type === "message_update").length).toBeGreaterThan(10);
        expect(received).toEqual(seen);
        // And a late joiner of the finished run gets it all again.
        await handle.result();
        const replay = await within(child([workflowId], undefined, token), 60_000, "late joiner");
        expect(replay.filter((l) => l.event).map((l) => l.event)).toEqual(seen);
      });
    } finally {
      await service.server.close();
    }
    // The run did continue as new: its first run is closed as such.
    const first = await env.client.workflow.getHandle(workflowId, firstRunId).describe();
    expect(first.status.name).toBe("CONTINUED_AS_NEW");
    expect(seen.filter((e) => e.type === "agent_start")).toHaveLength(1);
  }, 180_000);

  it("a finished run no tap holds is rebuilt from its transcript", async () => {
    const faux = fauxModel([fauxAssistantMessage("Just text.")]);
    const seen: AgentEvent[] = [];
    const taskQueue = uniqueId("tq");
    const worker = await createAgentWorker({
      connection: env.connection,
      taskQueue,
      workflowBundle: env.bundle,
      onEvent: (e) => void seen.push(snapshot(e)),
    });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("events-h"),
      model: faux.getModel(),
      prompt: "Hi",
    });
    await worker.runUntil(handle.result());
    const got: AgentEvent[] = [];
    for await (const { event } of handle.events()) got.push(event);
    expect(got).toEqual(seen.filter((e) => e.type !== "message_update"));
  }, 60_000);

  it("a cursor whose later events the tap evicted starts over on the transcript, not silently past the gap", async () => {
    const texts = Array.from({ length: 6 }, (_, i) => `Turn ${i} ${"x".repeat(3_000)}`);
    const faux = fauxModel([
      ...texts.slice(0, 5).map((t, i) => fauxAssistantMessage([fauxText(t), fauxToolCall("echo", { text: `${i}` })])),
      fauxAssistantMessage(texts[5]),
    ]);
    const taskQueue = uniqueId("tq");
    // A tap far smaller than the run: its first events are evicted long before the end.
    const service = await startRunEventsService({ client: env.client, port: 0, tap: { maxRunBytes: 8_000 } });
    const worker = await createAgentWorker({
      connection: env.connection,
      taskQueue,
      workflowBundle: env.bundle,
      tools: [{ ...echo, requiresApproval: false }],
      onEvent: service.onEvent,
    });
    try {
      const workflowId = uniqueId("events-gap");
      const handle = await startAgentRun(env.client, { taskQueue, workflowId, model: faux.getModel(), prompt: "Go" });
      await worker.runUntil(handle.result());
      expect(service.tap.complete(workflowId, 2)).toBe(false);
      const res = await fetch(`${service.server.url}/runs/${workflowId}/events`, {
        headers: { authorization: `Bearer ${service.server.token}`, "last-event-id": "t2" },
      });
      const body = await res.text();
      const ids = [...body.matchAll(/^id: (\S+)$/gm)].map((m) => m[1]);
      expect(ids.length).toBeGreaterThan(0);
      expect(ids.every((id) => id.startsWith("h"))).toBe(true);
      for (const text of texts) expect(body).toContain(text.slice(0, 12));
    } finally {
      await service.server.close();
    }
  }, 60_000);

  it("keeps a run's log bounded by dropping deltas of finished streams", () => {
    // Room for every message_start/end (~8 KB) and one stream's deltas: only deltas of finished streams go.
    const tap = new EventTap({ maxRunBytes: 10_000, maxRuns: 2 });
    const run = { workflowId: "w", runId: "r" };
    const partial = { role: "assistant", content: [{ type: "text", text: "" }], usage: {} } as never;
    for (let m = 0; m < 20; m++) {
      tap.append(run, { type: "message_start", message: partial });
      for (let i = 0; i < 50; i++)
        tap.append(run, {
          type: "message_update",
          message: partial,
          assistantEvent: { type: "text_delta", contentIndex: 0, delta: "x", partial },
        });
      tap.append(run, { type: "message_end", message: partial });
    }
    const events = tap.since("w", -1);
    expect(events.filter((e) => e.event.type === "message_start")).toHaveLength(20);
    expect(events.length).toBeLessThan(20 * 52);
    expect(tap.complete("w", -1)).toBe(true);
    tap.append({ workflowId: "a", runId: "r" }, { type: "agent_start" });
    tap.append({ workflowId: "b", runId: "r" }, { type: "agent_start" });
    expect(tap.has("w")).toBe(false);
  });
});
