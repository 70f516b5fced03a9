/**
 * The soak's workload: scenarios started at a steady rate, each with a script whose transcript is known, driven
 * by a bot client (approvals after a random delay, steering, follow-ups, session prompts, cancels), and each
 * run's check as soon as it ends: terminal state, transcript, every accepted update's fate. Scripts call the soak's
 * MCP tool too, and a share of the runs ask for a completion webhook (checked at the end, with the receiver's log).
 */
import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { WorkflowUpdateFailedError, type Client, type WorkflowHandle } from "@temporalio/client";
import { getAgentRun, runResult, startAgentRun } from "../../src/client/client.js";
import type { AgentMessage, AgentRunResult, AgentRunState } from "../../src/shared/contracts.js";
import {
  approveUpdate,
  closeUpdate,
  followUpUpdate,
  promptAnswerUpdate,
  promptUpdate,
  steerUpdate,
} from "../../src/shared/definitions.js";
import { SKIPPED_BY_STEERING } from "../../src/workflows/tool-calls.js";
import {
  expectedTranscript,
  scriptText,
  toMsg,
  type Msg,
  type Script,
  type Segment,
  type Step,
} from "./script-model.js";

export const SCENARIOS = ["tools", "approval", "steer", "followup", "session", "cancel", "continue-as-new"] as const;
export type Scenario = (typeof SCENARIOS)[number];
const WEIGHTS: Record<Scenario, number> = {
  tools: 5,
  approval: 3,
  steer: 2,
  followup: 2,
  session: 3,
  cancel: 2,
  "continue-as-new": 3,
};

/** Share of updates whose first attempt the client cuts mid-flight. */
const DISCONNECT_SHARE = 0.25;
/** Share of runs that ask for a completion webhook (the others must get none). */
const WEBHOOK_SHARE = 0.5;

export interface UpdateRecord {
  kind: "steer" | "followUp" | "prompt" | "approve" | "close" | "cancel";
  detail: string;
  outcome: "accepted" | "rejected" | "failed";
  error?: string;
  /** Set when the first attempt was cut on purpose (a client disconnected mid-update): what it got. */
  disconnected?: string;
}

export interface RunRecord {
  id: string;
  scenario: Scenario;
  startedAt: number;
  endedAt?: number;
  expectedStop: string;
  stopReason?: string;
  segments: Segment[];
  updates: UpdateRecord[];
  /** The transcript's raw messages (every run of the chain), once ended. */
  messages?: AgentMessage[];
  dropped?: unknown[];
  violations: string[];
  /** ledger_once calls whose worker died mid-call (an error result, as documented). */
  interruptedOnce: number;
  /** Whether the run asked for a completion webhook. */
  webhook: boolean;
  /** The chain's last run id, once ended: the one its webhook delivery names. */
  finalRunId?: string;
  done: boolean;
}

/** Transient failures of a client call (a server or database restart, a killed worker's query): try again. */
export const TRANSIENT =
  /unavailable|ECONNREFUSED|ECONNRESET|deadline|connect|workflow task failure|Call cancelled|RESOURCE_EXHAUSTED|No poller|timed out|query.*(failed|timeout)|TransportError|Broken pipe|not ready|shutting down|Internal|unknown|DEADLINE/i;

export async function retry<T>(what: string, fn: () => Promise<T>, deadlineMs = 240000): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw err;
      const text = `${String(err)} ${String((err as { cause?: unknown }).cause ?? "")}`;
      if (!TRANSIENT.test(text) || Date.now() > deadline) throw new Error(`${what}: ${text}`);
      await sleep(300 + Math.random() * 700);
    }
  }
}

const rand = (a: number, b: number) => a + Math.random() * (b - a);
const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)];

function randomSteps(n: number, allowApproval = false): Step[] {
  const kinds = ["par", "par", "seq", "fast", "once", "sub", "mcp", ...(allowApproval ? ["approve"] : [])];
  return Array.from({ length: n }, (_, i): Step => {
    const k = pick(kinds);
    if (k === "par") return { par: [`p${i}a`, `p${i}b`, `p${i}c`].slice(0, 2 + Math.floor(Math.random() * 2)) };
    if (k === "seq") return { seq: [`s${i}a`, `s${i}b`] };
    if (k === "fast") return { fast: [`f${i}a`, `f${i}b`] };
    if (k === "approve") return { approve: `a${i}` };
    if (k === "sub") return { sub: [`c${i}a`, `c${i}b`] };
    if (k === "mcp") return { mcp: [`m${i}a`, `m${i}b`].slice(0, 1 + Math.floor(Math.random() * 2)) };
    return { once: `o${i}` };
  });
}

export interface WorkloadOptions {
  client: Client;
  taskQueue: string;
  /** The webhook receiver's URL and the secret's name, for the runs that ask for a webhook. */
  webhook: { url: string; secretName: string };
  /** Called with each violation as it is found. */
  onViolation: (run: RunRecord, what: string) => void;
}

export class Workload {
  readonly runs: RunRecord[] = [];
  private n = 0;
  private readonly tasks = new Set<Promise<void>>();

  constructor(private readonly o: WorkloadOptions) {}

  pickScenario(): Scenario {
    const total = SCENARIOS.reduce((s, k) => s + WEIGHTS[k], 0);
    let r = Math.random() * total;
    for (const k of SCENARIOS) if ((r -= WEIGHTS[k]) < 0) return k;
    return "tools";
  }

  /** Starts one scenario in the background. */
  startOne(scenario = this.pickScenario()): void {
    const i = ++this.n;
    const rec: RunRecord = {
      id: `soak-${scenario}-${i}-${randomUUID().slice(0, 8)}`,
      scenario,
      startedAt: Date.now(),
      expectedStop: scenario === "cancel" ? "aborted" : "stop",
      segments: [],
      updates: [],
      violations: [],
      interruptedOnce: 0,
      webhook: Math.random() < WEBHOOK_SHARE,
      done: false,
    };
    this.runs.push(rec);
    const task = this.drive(rec)
      .catch((err) => this.violation(rec, `driver failed: ${err instanceof Error ? err.message : String(err)}`))
      .finally(() => {
        rec.done = true;
        rec.endedAt ??= Date.now();
        this.tasks.delete(task);
      });
    this.tasks.add(task);
  }

  get inFlight(): number {
    return this.tasks.size;
  }

  /** Waits for every scenario to end, at most `ms`; the ones still open are violations. */
  async drain(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (this.tasks.size > 0 && Date.now() < deadline) await sleep(500);
    for (const r of this.runs)
      if (!r.done) this.violation(r, `did not reach a terminal state within the drain (${ms / 1000} s)`);
  }

  private violation(run: RunRecord, what: string): void {
    run.violations.push(what);
    this.o.onViolation(run, what);
  }

  private script(rec: RunRecord, tag: string, steps: Step[]): Script {
    return { id: `${rec.id.slice(0, rec.id.lastIndexOf("-"))}${tag}`, steps };
  }

  /**
   * Sends an update as a careful client does: to the run that is current when it is first sent, under one update
   * id for every attempt (the server answers a repeat from that run, even after it continued as new or the
   * connection dropped mid-update); only a run that closed before accepting it gets it again, under a new id.
   */
  private async update<R>(
    rec: RunRecord,
    kind: UpdateRecord["kind"],
    detail: string,
    send: (handle: WorkflowHandle, updateId: string) => Promise<R>,
  ): Promise<R | undefined> {
    const entry: UpdateRecord = { kind, detail, outcome: "accepted" };
    rec.updates.push(entry);
    try {
      for (let attempt = 0; ; attempt++) {
        const runId = (await retry(`describe ${rec.id}`, () => this.o.client.workflow.getHandle(rec.id).describe()))
          .runId;
        const handle = this.o.client.workflow.getHandle(rec.id, runId);
        // An update id is plain text in history (the codec covers payloads only): a digest of the detail, which
        // may be a steering message, keeps it stable across attempts without putting the text there.
        const updateId = `${kind}-${runId}-${createHash("sha256").update(detail).digest("hex").slice(0, 16)}`;
        if (attempt === 0 && Math.random() < DISCONNECT_SHARE) {
          // A client that drops mid-update: the call is cut after 0–40 ms (the server may or may not have the
          // update by then); the same client comes back with the same update id, as below.
          const cut = new AbortController();
          const first = this.o.client.connection
            .withAbortSignal(cut.signal, () => send(handle, updateId))
            .then(
              () => "completed before the cut",
              (err: unknown) => String(err).slice(0, 80),
            );
          setTimeout(() => cut.abort(), rand(0, 40));
          entry.disconnected = await first;
        }
        try {
          return await retry(`${kind} ${rec.id}`, () => send(handle, updateId));
        } catch (err) {
          if (attempt < 5 && /already completed|continued as new/i.test(String(err))) continue;
          throw err;
        }
      }
    } catch (err) {
      entry.outcome = err instanceof WorkflowUpdateFailedError ? "rejected" : "failed";
      entry.error = err instanceof WorkflowUpdateFailedError ? (err.cause?.message ?? err.message) : String(err);
      this.violation(rec, `${kind} (${detail}) was not accepted: ${entry.error}`);
      return undefined;
    }
  }

  private async waitForApproval(rec: RunRecord, callId: string): Promise<void> {
    const handle = getAgentRun(this.o.client, rec.id);
    const deadline = Date.now() + 240000;
    for (;;) {
      const state: AgentRunState | undefined = await retry(`state ${rec.id}`, () => handle.state()).catch(
        () => undefined,
      );
      if (state?.pendingApprovals.some((p) => p.toolCallId === callId)) return;
      if (state?.stopReason) throw new Error(`ended (${state.stopReason}) before asking to approve ${callId}`);
      if (Date.now() > deadline) throw new Error(`no approval request for ${callId} within 240 s`);
      await sleep(rand(300, 800));
    }
  }

  private async drive(rec: RunRecord): Promise<void> {
    const { client, taskQueue } = this.o;
    const wf = () => client.workflow.getHandle(rec.id);
    const s = rec.scenario;
    const approvalAt = 1;
    const main = this.script(
      rec,
      "",
      s === "tools"
        ? randomSteps(2 + Math.floor(Math.random() * 3))
        : s === "continue-as-new"
          ? randomSteps(6 + Math.floor(Math.random() * 3))
          : s === "session"
            ? randomSteps(2)
            : [...randomSteps(1), { approve: "gate" }, ...randomSteps(1)],
    );
    rec.segments.push({ script: main });
    await retry(`start ${rec.id}`, () =>
      startAgentRun(client, {
        taskQueue,
        workflowId: rec.id,
        model: "soak/scripted",
        prompt: scriptText(main),
        maxTurns: 50,
        modelActivity: { heartbeatTimeout: "5s" },
        workflowTaskTimeout: "2s",
        ...(s === "continue-as-new" ? { continueAsNew: { afterTurns: 3 } } : {}),
        ...(s === "session" ? { session: { idleTimeout: "10m" }, continueAsNew: { afterTurns: 4 } } : {}),
        ...(rec.webhook ? { webhook: this.o.webhook } : {}),
      }),
    );
    const gateId = `${main.id}-${approvalAt}-0`;
    if (["approval", "steer", "followup", "cancel"].includes(s)) {
      await this.waitForApproval(rec, gateId);
      await sleep(rand(300, 3000)); // the bot takes its time
      if (s === "cancel") {
        rec.updates.push({ kind: "cancel", detail: gateId, outcome: "accepted" });
        await retry(`cancel ${rec.id}`, () => wf().cancel());
      } else {
        if (s === "steer") {
          const text = `steer ${rec.id}`;
          // Steering skips the call that waits for approval (pi-agent-core's rule): its result says so.
          rec.segments[0].steer = { afterStep: approvalAt, text, skipped: SKIPPED_BY_STEERING };
          await this.update(rec, "steer", text, (h, updateId) =>
            h.executeUpdate(steerUpdate, { args: [text], updateId }),
          );
        }
        if (s === "followup") {
          const next = this.script(rec, "f", randomSteps(2));
          rec.segments.push({ script: next });
          await this.update(rec, "followUp", next.id, (h, updateId) =>
            h.executeUpdate(followUpUpdate, { args: [scriptText(next)], updateId }),
          );
        }
        if (s !== "steer")
          await this.update(rec, "approve", gateId, (h, updateId) =>
            h.executeUpdate(approveUpdate, { args: [gateId], updateId }),
          );
      }
    }
    if (s === "session") {
      for (const tag of ["b", "c"]) {
        await sleep(rand(200, 2000));
        const next = this.script(rec, tag, randomSteps(2 + Math.floor(Math.random() * 2)));
        rec.segments.push({ script: next });
        let answer = await this.update(rec, "prompt", next.id, (h, updateId) =>
          h.executeUpdate(promptUpdate, { args: [scriptText(next)], updateId }),
        );
        // The session continued as new before answering: the newest run of the chain has the answer.
        while (answer && "continuedAsNew" in answer) {
          const { promptId } = answer;
          answer = await this.update(rec, "prompt", `${next.id} (answer after continue-as-new)`, (h, updateId) =>
            h.executeUpdate(promptAnswerUpdate, { args: [promptId], updateId }),
          );
        }
        if (answer && answer.stopReason !== "stop")
          this.violation(rec, `prompt ${next.id} answered ${answer.stopReason}: ${answer.errorMessage ?? ""}`);
      }
      await this.update(rec, "close", "", (h, updateId) => h.executeUpdate(closeUpdate, { updateId }));
    }
    const result: AgentRunResult = await retry(`result ${rec.id}`, () => runResult(wf()), 600000);
    rec.endedAt = Date.now();
    rec.stopReason = result.stopReason;
    rec.dropped = result.dropped;
    rec.messages = await retry(`transcript ${rec.id}`, () => getAgentRun(client, rec.id).transcript());
    rec.finalRunId = (await retry(`describe ${rec.id}`, () => wf().describe())).runId;
    this.check(rec);
  }

  /** Terminal state, transcript and update fates of an ended run. */
  private check(rec: RunRecord): void {
    if (rec.stopReason !== rec.expectedStop)
      this.violation(rec, `ended ${rec.stopReason}, its script implies ${rec.expectedStop}`);
    if (rec.dropped?.length) this.violation(rec, `dropped accepted messages: ${JSON.stringify(rec.dropped)}`);
    const actual: Msg[] = (rec.messages ?? []).map((m) => toMsg(m as Parameters<typeof toMsg>[0]));
    // An idempotent: false call whose worker died mid-call says so and the run goes on (documented).
    actual.forEach((m, i) => {
      if (m.role === "toolResult" && m.tool === "ledger_once" && m.isError && /interrupt/i.test(m.text)) {
        rec.interruptedOnce++;
        const call = actual
          .slice(0, i)
          .reverse()
          .find((x) => x.role === "assistant");
        const key = call?.role === "assistant" ? call.calls.find((c) => c.name === "ledger_once")?.args.key : undefined;
        actual[i] = { role: "toolResult", tool: "ledger_once", isError: false, text: `ok ${key}` };
      }
    });
    let expected = expectedTranscript(rec.segments);
    if (rec.scenario === "cancel") {
      // Cancelled while the gate waited: everything up to the gate's call, then its aborted result, nothing more.
      const gate = expected.findIndex(
        (m) => m.role === "assistant" && m.calls.some((c) => c.name === "ledger_guarded"),
      );
      expected = expected.slice(0, gate + 1);
      const last = actual[gate + 1];
      if (!last || last.role !== "toolResult" || last.tool !== "ledger_guarded" || !/abort|cancel/i.test(last.text))
        this.violation(rec, `after the cancel: expected the gate's aborted result, got ${JSON.stringify(last)}`);
      if (actual.length > gate + 2)
        this.violation(rec, `messages after the cancel: ${JSON.stringify(actual.slice(gate + 2))}`);
      actual.splice(gate + 1);
    }
    const diff = firstDifference(expected, actual);
    if (diff)
      this.violation(rec, `transcript differs at message ${diff.index}: expected ${diff.expected}, got ${diff.actual}`);
    // Every accepted update's visible fate: steering and follow-ups in the transcript once (the comparison above
    // places them), prompts answered (checked when sent), the approval's call ran (its result is in the transcript).
    for (const u of rec.updates.filter((x) => x.outcome === "accepted")) {
      const seen = (text: string) => actual.filter((m) => m.role === "user" && m.text.includes(text)).length;
      if ((u.kind === "steer" || u.kind === "followUp" || u.kind === "prompt") && !u.detail.includes("answer")) {
        const n = seen(u.kind === "steer" ? u.detail : `"id":"${u.detail}"`);
        if (n !== 1) this.violation(rec, `accepted ${u.kind} ${u.detail} appears ${n} times in the transcript`);
      }
    }
  }
}

function firstDifference(
  expected: Msg[],
  actual: Msg[],
): { index: number; expected: string; actual: string } | undefined {
  const n = Math.max(expected.length, actual.length);
  for (let i = 0; i < n; i++) {
    const e = JSON.stringify(expected[i]);
    const a = JSON.stringify(actual[i]);
    if (e !== a) return { index: i, expected: e ?? "(end)", actual: a ?? "(end)" };
  }
  return undefined;
}
