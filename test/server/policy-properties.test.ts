/**
 * Property test (fast-check) of issue #41 on the real dev server: random interleavings of approve / approve and
 * remember / deny / policy change / submitToolResult / steer / cancel, on runs that continue as new, never lose
 * an accepted request (each has a visible fate in the transcript, the result or history) and never run a denied
 * call: not one a person denied, nor one the policy in force when its batch began denies (read back from history).
 */
import { describe, expect, it } from "@jest/globals";
import fc from "fast-check";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentMessage, AgentTool, ApprovalPolicy } from "../../src/shared/contracts.js";
import type { AgentRunWorkflowInput } from "../../src/shared/wire.js";
import { policyDenial, policyVerdict } from "../../src/shared/approval-rules.js";
import { ABORTED_BY_CANCEL, SKIPPED_BY_STEERING } from "../../src/workflows/tool-calls.js";
import { fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

const POLICIES: ApprovalPolicy[] = [
  { rules: [{ match: "guarded", action: "deny", reason: "p0" }] },
  { rules: [{ match: "free", action: "deny" }], default: "tool" },
  { default: "allow" },
  {
    rules: [
      { match: "ask_*", action: "ask" },
      { match: "*", action: "tool" },
    ],
  },
  { rules: [{ match: "*", action: "deny", reason: "lockdown" }] },
];

type Op =
  | { kind: "approve"; remember: boolean }
  | { kind: "deny" }
  | { kind: "policy"; which: number }
  | { kind: "submit"; good: boolean }
  | { kind: "steer" }
  | { kind: "cancel" }
  | { kind: "pause" };

const decode = (payload: { data?: Uint8Array | null } | undefined | null) =>
  JSON.parse(Buffer.from(payload?.data ?? []).toString()) as unknown;

/**
 * For each turn of the chain (1-based, in order), the policy its batch followed: the run's starting policy (its
 * input, or what the previous run carried), then every setApprovalPolicy update accepted by a workflow task up
 * to and including the one that took up that turn's model answer (an activation applies updates before results).
 */
async function batchPolicies(handle: AgentRunHandle): Promise<(ApprovalPolicy | undefined)[]> {
  const out: (ApprovalPolicy | undefined)[] = [];
  const first = (await handle.workflow.describe()).raw.workflowExecutionInfo?.firstRunId ?? undefined;
  for (let runId: string | undefined = first; runId; ) {
    const events = (await env.client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events ?? [];
    const input = decode(
      events[0].workflowExecutionStartedEventAttributes?.input?.payloads?.[0],
    ) as AgentRunWorkflowInput;
    let policy = input.continued?.approvals ? input.continued.approvals.policy : input.approvalPolicy;
    const modelScheduled = new Set<string>();
    let lastTask = -1;
    let pendingModelAnswer = false;
    const accepted: { task: number; policy: ApprovalPolicy }[] = [];
    const turnTasks: number[] = [];
    events.forEach((e, i) => {
      if (e.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage")
        modelScheduled.add(String(e.eventId));
      if (
        e.activityTaskCompletedEventAttributes &&
        modelScheduled.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId))
      )
        pendingModelAnswer = true;
      if (e.workflowTaskCompletedEventAttributes) {
        lastTask = i;
        if (pendingModelAnswer) turnTasks.push(i);
        pendingModelAnswer = false;
      }
      const request = e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
      if (request?.name === "setApprovalPolicy")
        accepted.push({ task: lastTask, policy: decode(request.args?.payloads?.[0]) as ApprovalPolicy });
    });
    for (const task of turnTasks) {
      for (const a of accepted.filter((x) => x.task <= task)) policy = a.policy;
      accepted.splice(0, accepted.filter((x) => x.task <= task).length);
      out.push(policy);
    }
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return out;
}

describe("issue 41: policies, approvals and client tools under random interleavings", () => {
  it("never lose an accepted request and never run a denied call", async () => {
    // Each turn below 4 asks for one call of each kind, with ids naming the run and the turn; then it answers.
    const reply = (context: Context) => {
      const key = textOf(context.messages[0]).split(" ")[0];
      const turn = context.messages.filter((m) => m.role === "assistant").length + 1;
      if (turn > 3) return fauxAssistantMessage(`done after ${turn - 1}`);
      return fauxAssistantMessage(
        ["guarded", "free", "ask_user"].map((name) => fauxToolCall(name, {}, { id: `${key}.t${turn}.${name}` })),
        { stopReason: "toolUse" },
      );
    };
    const faux = fauxModel(Array.from({ length: 3000 }, () => reply));
    const executed = new Set<string>();
    const tool = (name: string, requiresApproval: boolean): AgentTool => ({
      name,
      description: name,
      parameters: Type.Object({}),
      ...(requiresApproval ? { requiresApproval: true, approvalTimeout: "4s" } : {}),
      async execute(id) {
        executed.add(id);
        return { content: [{ type: "text", text: `${name} ran` }] };
      },
    });
    const { worker, taskQueue } = await testWorker(env, [tool("guarded", true), tool("free", false)]);
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant("approve" as const), remember: fc.boolean() }),
      fc.record({ kind: fc.constant("deny" as const) }),
      fc.record({ kind: fc.constant("policy" as const), which: fc.integer({ min: 0, max: POLICIES.length - 1 }) }),
      fc.record({ kind: fc.constant("submit" as const), good: fc.boolean() }),
      fc.record({ kind: fc.constantFrom("steer" as const, "pause" as const, "pause" as const) }),
      fc.record({ kind: fc.constant("cancel" as const) }),
    );
    const tally = { approved: 0, denied: 0, submitted: 0, policies: 0 };
    await worker.runUntil(
      fc.assert(
        fc.asyncProperty(
          fc.array(op, { minLength: 1, maxLength: 12 }),
          fc.option(fc.integer({ min: 0, max: POLICIES.length - 1 }), { nil: undefined }),
          fc.integer({ min: 1, max: 2 }),
          fc.boolean(),
          async (ops, initial, afterTurns, drain) => {
            const key = uniqueId("p41");
            const handle = await startAgentRun(env.client, {
              taskQueue,
              workflowId: key,
              model: faux.getModel(),
              prompt: `${key} go`,
              maxTurns: 6,
              continueAsNew: { afterTurns },
              clientTools: [
                {
                  name: "ask_user",
                  description: "asks",
                  parameters: { type: "object" },
                  result: { type: "string" },
                  timeout: "4s",
                },
              ],
              ...(initial !== undefined ? { approvalPolicy: POLICIES[initial] } : {}),
            });
            const approved: string[] = [];
            const denied: string[] = [];
            const submitted = new Map<string, string>();
            const steered: string[] = [];
            let policies = 0;
            let n = 0;
            let cancelled = false;
            const state = () => handle.state().catch(() => undefined);
            /** The first call waiting for a person (or a client), waiting up to a second for one to show up. */
            const waitingSoon = async (client: boolean) => {
              for (let i = 0; i < 20; i++) {
                const now = await state();
                const id = client ? now?.pendingClientResults?.[0]?.toolCallId : now?.pendingApprovals[0]?.toolCallId;
                if (id || !now || now.stopReason !== undefined) return id;
                await new Promise((r) => setTimeout(r, 50));
              }
              return undefined;
            };
            for (const o of ops) {
              if (o.kind === "pause") await new Promise((r) => setTimeout(r, 150));
              else if (o.kind === "approve" || o.kind === "deny") {
                const id = await waitingSoon(false);
                if (!id) continue;
                const sent =
                  o.kind === "deny"
                    ? handle.deny(id, "no")
                    : handle.approve(id, o.remember ? { remember: true } : undefined);
                if (
                  await sent.then(
                    () => true,
                    () => false,
                  )
                )
                  (o.kind === "deny" ? denied : approved).push(id);
              } else if (o.kind === "policy") {
                const policy = POLICIES[o.which];
                if (
                  await handle.setApprovalPolicy(policy).then(
                    () => true,
                    () => false,
                  )
                ) {
                  policies++;
                  // Visible at once to whoever looks (while the run runs).
                  const now = await state();
                  if (now && now.stopReason === undefined) expect(now.approvalPolicy).toEqual(policy);
                }
              } else if (o.kind === "submit") {
                const id = await waitingSoon(true);
                if (!id) continue;
                const value = `answer ${++n}`;
                const ok = await handle.submitToolResult(id, o.good ? value : { not: "a string" }).then(
                  () => true,
                  () => false,
                );
                // A result the schema refuses is never accepted.
                if (!o.good) expect(ok).toBe(false);
                if (ok) submitted.set(id, value);
              } else if (o.kind === "steer") {
                const text = `steer ${++n}`;
                if (
                  await handle.steer(text).then(
                    () => true,
                    () => false,
                  )
                )
                  steered.push(text);
              } else
                cancelled =
                  (await handle.cancel().then(
                    () => true,
                    () => false,
                  )) || cancelled;
            }
            // Then the run is cancelled, or drained: every waiting call answered (approved, or given a result) till it ends.
            if (!cancelled && drain) {
              const end = within(handle.result(), 30_000, "the drained run").then(() => true);
              for (let ended = false; !ended; ) {
                const now = await state();
                for (const a of now?.pendingApprovals ?? [])
                  if (
                    await handle.approve(a.toolCallId).then(
                      () => true,
                      () => false,
                    )
                  )
                    approved.push(a.toolCallId);
                for (const c of now?.pendingClientResults ?? []) {
                  const value = `answer ${++n}`;
                  if (
                    await handle.submitToolResult(c.toolCallId, value).then(
                      () => true,
                      () => false,
                    )
                  )
                    submitted.set(c.toolCallId, value);
                }
                ended = await Promise.race([end, new Promise<boolean>((r) => setTimeout(() => r(false), 50))]);
              }
            }
            if (!cancelled) await handle.cancel().catch(() => undefined);
            tally.approved += approved.length;
            tally.denied += denied.length;
            tally.submitted += submitted.size;
            tally.policies += policies;
            const result = await within(handle.result(), 30_000, "the run to end");
            expect(["stop", "aborted", "max_turns"]).toContain(result.stopReason);
            const transcript = await handle.transcript();
            const results = new Map<string, AgentMessage & { role: "toolResult" }>();
            for (const m of transcript) if (m.role === "toolResult") results.set(m.toolCallId, m);
            const text = (id: string) => textOf(results.get(id));
            const gone = [ABORTED_BY_CANCEL, SKIPPED_BY_STEERING];

            // Every call of every assistant message has exactly one result (no call is left hanging).
            const calls = transcript.flatMap((m) =>
              m.role === "assistant"
                ? m.content.filter((c) => c.type === "toolCall").map((c) => c as { id: string; name: string })
                : [],
            );
            for (const c of calls) expect([c.id, results.has(c.id)]).toEqual([c.id, true]);
            // Accepted approvals ran (or a cancel or steering overtook them); accepted denials never ran.
            for (const id of approved) {
              const name = id.split(".").at(-1)!;
              const ran = name === "ask_user" ? !text(id).startsWith("Tool call denied") : text(id) === `${name} ran`;
              expect([id, ran || gone.includes(text(id))]).toEqual([id, true]);
            }
            for (const id of denied) {
              expect([id, executed.has(id)]).toEqual([id, false]);
              expect([id, text(id) === "Tool call denied by the user: no" || gone.includes(text(id))]).toEqual([
                id,
                true,
              ]);
            }
            // Accepted client results are the calls' results (or a cancel overtook them).
            for (const [id, value] of submitted)
              expect([id, text(id) === value || text(id) === ABORTED_BY_CANCEL]).toEqual([id, true]);
            // Accepted steering entered the transcript or is reported as dropped.
            const users = new Set(transcript.filter((m) => m.role === "user").map((m) => textOf(m)));
            const dropped = new Set((result.dropped ?? []).map((d) => d.preview));
            for (const s of steered) expect([s, users.has(s) || dropped.has(s)]).toEqual([s, true]);
            // Accepted policy changes are in history.
            const perTurn = await batchPolicies(handle);
            // Each call follows the policy its batch began with: a call it denies is refused and never runs, and
            // only such calls are refused by the policy.
            for (const c of calls) {
              const turn = Number(/\.t(\d+)\./.exec(c.id)![1]);
              const verdict = policyVerdict(perTurn[turn - 1], c.name);
              const got = text(c.id);
              if (verdict.action === "deny") {
                expect([c.id, executed.has(c.id)]).toEqual([c.id, false]);
                expect([c.id, got === policyDenial(c.name, verdict) || gone.includes(got)]).toEqual([c.id, true]);
              } else expect([c.id, got.startsWith("Tool call denied by the approval policy")]).toEqual([c.id, false]);
            }
            let inHistory = 0;
            const first = (await handle.workflow.describe()).raw.workflowExecutionInfo?.firstRunId ?? undefined;
            for (let runId: string | undefined = first; runId; ) {
              const events = (await env.client.workflow.getHandle(key, runId).fetchHistory()).events ?? [];
              inHistory += events.filter(
                (e) =>
                  e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name ===
                  "setApprovalPolicy",
              ).length;
              runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
            }
            expect(inHistory).toBe(policies);
          },
        ),
        { numRuns: 12, seed: Number(process.env.FC_SEED ?? 20261203), endOnFailure: true },
      ),
    );
    // The runs did exercise every kind of request.
    expect(tally).toEqual({
      approved: expect.any(Number),
      denied: expect.any(Number),
      submitted: expect.any(Number),
      policies: expect.any(Number),
    });
    expect([tally, Object.values(tally).every((n) => n > 0)]).toEqual([tally, true]);
  }, 400_000);
});
