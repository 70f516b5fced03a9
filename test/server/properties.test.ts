/**
 * Property-based tests on the real dev server (fast-check): random sizes,
 * unicode, duplicate tool-call ids and interleavings of updates thrown at
 * bounded runs that continue as new.
 *
 * - Issue 9: the run always ends (no hang), is never terminated by the
 *   server, and every model call saw exactly the context history recorded.
 * - Issue 19: every accepted update has a visible fate, agent_end is emitted
 *   once per loop (per prompt answered), and a session ends when closed or
 *   cancelled.
 */
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentMessage, AgentRunResult, AgentTool, PromptResult } from "../../src/shared/contracts.js";
import { contextMismatches, SeenContexts } from "../support/context-check.js";
import { fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

/** How each run of the chain ended, read from the histories (following continue-as-new links). */
async function endings(handle: AgentRunHandle): Promise<string[]> {
  return (await chain(handle)).ends;
}

/** Each run's ending, and how many workflow task attempts the server rejected across the chain. */
async function chain(handle: AgentRunHandle): Promise<{ ends: string[]; failedTasks: number }> {
  const out: string[] = [];
  let failedTasks = 0;
  const first = (await handle.workflow.describe()).raw.workflowExecutionInfo?.firstRunId ?? undefined;
  for (let runId: string | undefined = first; runId; ) {
    const history = await env.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
    const last = history.events?.at(-1);
    const continued = last?.workflowExecutionContinuedAsNewEventAttributes;
    out.push(
      Object.keys(last ?? {}).find((k) => k.startsWith("workflowExecution") && k.endsWith("EventAttributes")) ?? "none",
    );
    failedTasks += history.events?.filter((e) => e.workflowTaskFailedEventAttributes).length ?? 0;
    runId = continued?.newExecutionRunId ?? undefined;
  }
  return { ends: out, failedTasks };
}

const userTexts = (messages: AgentMessage[]) => messages.filter((m) => m.role === "user").map((m) => textOf(m));

/** Text of random size and alphabet: ASCII, accented, CJK, emoji (UTF-8 widths 1 to 4). */
const text = (maxChars: number) =>
  fc
    .tuple(
      fc.constantFrom("a", "é", "漢", "😀", "\n"),
      fc.integer({ min: 1, max: maxChars }),
      fc.string({ maxLength: 20 }),
    )
    .map(([unit, n, tail]) => unit.repeat(n) + tail);

describe("issue 9: bounded runs survive random input", () => {
  it("always end, are never terminated, and the model always sees the recorded context", async () => {
    const seen = new SeenContexts();
    // Turn n asks for the batch scripted for it: ids may repeat within a batch and across turns.
    const plan = new Map<string, { batches: { id: string; size: number }[][] }>();
    const reply = (context: Context) => {
      const runKey = textOf(context.messages[0]).split(" ")[0];
      const turn = context.messages.filter((m) => m.role === "assistant").length;
      const batch = plan.get(runKey)?.batches[turn];
      if (!batch) return fauxAssistantMessage(`done after ${turn} turns`);
      return fauxAssistantMessage(
        batch.map((c) => fauxToolCall("blob", { size: c.size }, { id: c.id })),
        { stopReason: "toolUse" },
      );
    };
    const faux = fauxModel(seen.wrap(Array.from({ length: 2000 }, () => reply)));
    const blob: AgentTool = {
      name: "blob",
      description: "returns text of the given size",
      parameters: Type.Object({ size: Type.Number() }),
      async execute(id, { size }) {
        return { content: [{ type: "text", text: `${id}:` + "€😀a".repeat(size) }], details: { size } };
      },
    };
    const { worker, taskQueue } = await testWorker(env, [blob]);
    const scenario = fc.record({
      batches: fc.array(
        fc.array(fc.record({ id: fc.constantFrom("a", "b", "call_0"), size: fc.integer({ min: 0, max: 3_000 }) }), {
          minLength: 1,
          maxLength: 3,
        }),
        {
          minLength: 1,
          maxLength: 3,
        },
      ),
      afterTurns: fc.integer({ min: 1, max: 3 }),
      updates: fc.array(fc.record({ kind: fc.constantFrom("steer", "followUp"), text: text(80_000) }), {
        maxLength: 3,
      }),
    });
    await worker.runUntil(
      fc.assert(
        fc.asyncProperty(scenario, async ({ batches, afterTurns, updates }) => {
          const key = uniqueId("p9");
          plan.set(key, { batches });
          const before = seen.calls.length;
          const handle = await startAgentRun(env.client, {
            taskQueue,
            workflowId: key,
            model: faux.getModel(),
            prompt: `${key} go`,
            continueAsNew: { afterTurns },
            maxTurns: 12,
          });
          const outcomes = await Promise.all(
            updates.map((u) =>
              (u.kind === "steer" ? handle.steer(u.text) : handle.followUp(u.text)).then(
                () => "accepted",
                (e: Error) => e.name,
              ),
            ),
          );
          // Refused updates are refused with a type, never by the server failing the run.
          for (const o of outcomes) expect(["accepted", "RunUpdateRejectedError", "RunFinishedError"]).toContain(o);
          const result = await within(handle.result(), 60_000, "the run to end");
          expect(["stop", "max_turns"]).toContain(result.stopReason);
          const ends = await endings(handle);
          expect(ends.at(-1)).toBe("workflowExecutionCompletedEventAttributes");
          expect(
            ends.filter(
              (e) =>
                e !== "workflowExecutionContinuedAsNewEventAttributes" &&
                e !== "workflowExecutionCompletedEventAttributes",
            ),
          ).toEqual([]);
          // Context seen == context recorded, for every call of this run.
          const transcript = await handle.transcript();
          const mine = seen.calls.slice(before).filter((c) => textOf(c[0]).startsWith(key));
          expect(contextMismatches(mine, transcript)).toEqual([]);
        }),
        { numRuns: 10, seed: Number(process.env.FC_SEED ?? 20261130), endOnFailure: true },
      ),
    );
  }, 300_000);
});

describe("issue 19: every accepted update has a visible fate", () => {
  type Op =
    | { kind: "steer" | "followUp" | "prompt"; text: string }
    | { kind: "approve" | "deny" | "close" | "cancel" | "pause" };

  it("random interleavings on a session crossing continue-as-new", async () => {
    // A prompt that starts with "tool" asks for the approval tool; anything else is answered at once.
    const reply = (context: Context) => {
      const last = context.messages.at(-1)!;
      if (last.role === "user" && textOf(last).startsWith("tool"))
        return fauxAssistantMessage([fauxToolCall("guarded", {})], { stopReason: "toolUse" });
      return fauxAssistantMessage(`answer ${context.messages.length}`);
    };
    const faux = fauxModel(Array.from({ length: 3000 }, () => reply));
    const guarded: AgentTool = {
      name: "guarded",
      description: "needs approval",
      parameters: Type.Object({}),
      requiresApproval: true,
      approvalTimeout: "3s",
      execute: async () => ({ content: [{ type: "text", text: "guarded ran" }] }),
    };
    const { worker, taskQueue, events } = await testWorker(env, [guarded]);
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constantFrom("steer" as const, "followUp" as const, "prompt" as const),
        text: fc.constantFrom("tool please", "hello", "more"),
      }),
      fc.record({ kind: fc.constantFrom("approve" as const, "deny" as const, "pause" as const, "pause" as const) }),
      fc.record({ kind: fc.constantFrom("close" as const, "cancel" as const) }),
    );
    await worker.runUntil(
      fc.assert(
        fc.asyncProperty(
          fc.array(op, { minLength: 1, maxLength: 12 }),
          fc.integer({ min: 1, max: 2 }),
          async (ops, afterTurns) => {
            const key = uniqueId("p19");
            const firstEvent = events.length;
            const handle = await startAgentRun(env.client, {
              taskQueue,
              workflowId: key,
              model: faux.getModel(),
              prompt: "tool first",
              session: { idleTimeout: "30s" },
              continueAsNew: { afterTurns },
            });
            const sent: { kind: string; text: string }[] = [];
            const prompts: Promise<PromptResult | Error>[] = [];
            let n = 0;
            let ended = false;
            for (const o of ops) {
              if (o.kind === "pause") {
                await new Promise((r) => setTimeout(r, 150));
              } else if (o.kind === "steer" || o.kind === "followUp") {
                const t = `${o.text} #${++n}`;
                const ok = await (o.kind === "steer" ? handle.steer(t) : handle.followUp(t)).then(
                  () => true,
                  () => false,
                );
                if (ok) sent.push({ kind: o.kind, text: t });
              } else if (o.kind === "prompt") {
                prompts.push(handle.prompt(`${o.text} #${++n}`).catch((e: Error) => e));
              } else if (o.kind === "approve" || o.kind === "deny") {
                const waiting = (await handle.state().catch(() => undefined))?.pendingApprovals ?? [];
                for (const w of waiting)
                  await (o.kind === "approve" ? handle.approve(w.toolCallId) : handle.deny(w.toolCallId, "no")).catch(
                    () => undefined,
                  );
              } else {
                ended =
                  (await (o.kind === "close" ? handle.close() : handle.cancel()).then(
                    () => true,
                    () => false,
                  )) || ended;
              }
            }
            if (!ended) await handle.close().catch(() => handle.cancel());
            // The session ends once closed or cancelled (not at the idle timeout).
            const result: AgentRunResult = await within(handle.result(), 25_000, "the session to end");
            const answers = await within(Promise.all(prompts), 25_000, "every prompt's answer");
            const transcript = await handle.transcript();
            // Every accepted steering or follow-up message entered the transcript or is reported as dropped.
            const inTranscript = new Set(userTexts(transcript));
            const dropped = new Set((result.dropped ?? []).map((d) => d.preview));
            for (const s of sent)
              expect([s.text, inTranscript.has(s.text) || dropped.has(s.text)]).toEqual([s.text, true]);
            // Every prompt was answered, refused up front with a typed error, or reported as dropped.
            for (const a of answers) {
              if (a instanceof Error) expect(["RunUpdateRejectedError", "RunFinishedError"]).toContain(a.name);
              else expect(["stop", "aborted", "max_turns", "terminate", "length"]).toContain(a.stopReason);
            }
            // One agent_end per loop: the first prompt's, and one per prompt whose loop ran.
            const loops =
              1 +
              answers.filter(
                (a) => !(a instanceof Error) && a.errorMessage !== "Session cancelled before this prompt ran",
              ).length;
            const ends = events.slice(firstEvent).filter((e) => e.type === "agent_end").length;
            // Sinks run when a workflow task's activation ends, before the server accepts the task: an attempt the
            // server rejects (UnhandledCommand: a new event arrived as it completed) may have emitted its own events
            // before the retried task took another path (README, "Events"). Only those can add an agent_end.
            const { failedTasks } = await chain(handle);
            if (failedTasks === 0) expect(ends).toBe(loops);
            else expect([ends >= loops, ends - loops <= failedTasks]).toEqual([true, true]);
            expect(["stop", "aborted", "length"]).toContain(result.stopReason);
          },
        ),
        { numRuns: 12, seed: Number(process.env.FC_SEED ?? 20261130), endOnFailure: true },
      ),
    );
  }, 400_000);
});
