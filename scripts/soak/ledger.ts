/**
 * The ledger check: each completed tool call's effect happened exactly once.
 *
 * A completed call's result carries the token of the execution whose result history recorded; that execution's
 * ledger line must exist. Another line for the same run and call is a second effect. Temporal promises an
 * idempotent tool at-least-once, so a second effect is excused only when a retry could have produced it, decided
 * from the ledger's own records and the fault log's times (`judgeLedger`, a pure function):
 *
 * - it was written by another execution of the call than the recorded one (each `execute` has its own `exec` id),
 *   and an earlier attempt than the recorded one (a regular activity's retries number up; a local activity's
 *   attempts start at 1 again when its workflow task is retried, so for one it is enough that the execution
 *   differs);
 * - that execution was cut short by a fault: its worker was SIGKILLed, or SIGSTOPped, while it held the call
 *   (from when the attempt was scheduled to its completion record, written as `execute` returns, plus
 *   COMPLETION_SLACK_MS for the result to leave the process), or the server or the database restarted then; or,
 *   for a local activity, it ran in a workflow task its worker was handed while frozen and ran on waking
 *   (STALE_TASK_MS), or in a workflow task history records as lost, or in a later attempt of that task (a
 *   retried workflow task's attempts are not written to history until one completes);
 * - and the recorded execution started after that fault began (a retry follows the fault that caused it).
 *
 * Two effects of one execution are never excused: no retry writes twice (that is what `--sabotage` injects). An
 * `idempotent: false` tool must never have two effects, and a cancelled run's gate none. A call whose result the
 * soak does not see (a sub-agent's, or one with no result in its run's transcript) is judged as if the
 * execution that best explains the others were the recorded one.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { canonical, withoutDetails } from "./script-model.js";
import type { RunRecord } from "./workload.js";

/** One effect, as a ledger tool appends it when its effect happens (scripts/soak/worker-config.ts). */
export interface LedgerEffect {
  kind?: "effect";
  wf: string;
  call: string;
  tool: string;
  key: string;
  /** The activity attempt (Temporal's numbering: 1, 2, …). */
  attempt: number;
  pid: number;
  /** The token this execution returns in its result's details. */
  token: string;
  /** When the effect was written (ms since the epoch). */
  t: number;
  /** This execution of the call: one id per `execute`, so a retry has another. */
  exec?: string;
  /** When this attempt was scheduled (the activity's currentAttemptScheduledTimestampMs). */
  scheduled?: number;
  /** When `execute` began. */
  started?: number;
  /** Whether the call ran as a local activity (a `fast` tool). */
  local?: boolean;
}

/** The completion record: written by an execution as its `execute` returns, after its effect. */
export interface LedgerDone {
  kind: "done";
  wf: string;
  call: string;
  exec: string;
  attempt: number;
  pid: number;
  t: number;
}

export type LedgerLine = LedgerEffect | LedgerDone;

/** The fault log, in ms since the epoch: when each signal was sent, each freeze ended, each restart was over. */
export type Fault =
  | { kind: "kill"; pid: number; at: number }
  | { kind: "stop"; pid: number; at: number; until: number }
  | { kind: "restart"; what: string; at: number; until: number }
  /**
   * A workflow task of run `wf` that did not complete (its history records it timed out or failed at `at`): the
   * local activities it ran run again in the next attempt, as Temporal documents (at-least-once).
   */
  | { kind: "task"; wf: string; at: number };

/** How long before (or, in a later attempt, after) its timed-out or failed event a lost workflow task may have run a local activity. */
export const TASK_LIFETIME_MS = 30000;

/**
 * After a freeze, how long its worker may go on running tasks it was handed while frozen (a poll that was
 * answered as it stopped): the server has timed them out and retried them elsewhere by then. Only a local
 * activity can start that late in such a task; a regular one was scheduled before the freeze ended, so the
 * freeze overlaps it anyway. The soak's CI run of 2026-12-05 met it: a worker frozen 8.3 s ran its stale task's
 * two local activities 0.3–0.5 s after SIGCONT.
 */
export const STALE_TASK_MS = 10000;

/** Time for a result to leave the worker after `execute` returned (the codec, the completion call). */
export const COMPLETION_SLACK_MS = 2000;
/** Around a server or database restart: it starts when the stop is sent; calls fail for a while after it is back. */
export const RESTART_LEAD_MS = 1000;
export const RESTART_SETTLE_MS = 10000;

export interface LedgerReport {
  /** Effect lines in the ledger. */
  effects: number;
  completedCalls: number;
  /** Second effects a retry after a fault explains. */
  faultRetries: number;
  /** Second effects nothing explains (each is in a violation). */
  unexplained: number;
  /** Duplicates `--sabotage` injected (marked in the ledger for this count only; the check never reads the mark). */
  injected?: number;
  violations: { run: string; what: string }[];
}

/** What the check needs of a run: its id (the workflow id) and its transcript, once fetched. */
export type LedgerRun = Pick<RunRecord, "id" | "messages">;

/** One execution of a call: what it wrote and when it held the call. */
interface Execution {
  id: string;
  /** The run (workflow id) it belongs to. */
  wf: string;
  pid: number;
  attempt: number;
  local: boolean;
  /** From when it may have held the call: its attempt's scheduling (or its start, or its first effect). */
  from: number;
  /** When it began running (or its first effect). */
  started: number;
  /** Its completion record, if it wrote one. */
  done?: number;
  effects: LedgerEffect[];
}

const show = (x: Execution) =>
  `pid ${x.pid} attempt ${x.attempt}${x.done === undefined ? ", no completion record" : ""} (${x.effects
    .map((e) => new Date(e.t).toISOString())
    .join(", ")})`;

/** The fault that cut `lost` short and that `retry` followed, if there is one. */
function faultBehind(lost: Execution, retry: Execution, faults: Fault[]): Fault | undefined {
  const held: [number, number] = [lost.from, lost.done === undefined ? Infinity : lost.done + COMPLETION_SLACK_MS];
  const overlaps = (a: number, b: number) => a <= held[1] && b >= held[0];
  return faults.find((f) => {
    switch (f.kind) {
      case "kill":
        return f.pid === lost.pid && overlaps(f.at, f.at) && retry.started >= f.at;
      case "stop":
        return (
          f.pid === lost.pid &&
          retry.started >= f.at &&
          (overlaps(f.at, f.until) || (lost.local && lost.started >= f.at && lost.started <= f.until + STALE_TASK_MS))
        );
      case "restart":
        return overlaps(f.at - RESTART_LEAD_MS, f.until + RESTART_SETTLE_MS) && retry.started >= f.at - RESTART_LEAD_MS;
      case "task":
        // Only a local activity runs inside a workflow task; it ran in the lost task or in one of the task's later
        // attempts (unrecorded until one completes: the recorded execution's), the retry after the loss.
        return (
          lost.local &&
          f.wf === lost.wf &&
          Math.abs(lost.started - f.at) <= TASK_LIFETIME_MS &&
          lost.started <= Math.max(f.at + COMPLETION_SLACK_MS, retry.started) &&
          retry.started >= f.at
        );
    }
  });
}

/** What a violation's reader needs to judge it: both executions' times and the faults near them. */
function evidence(lost: Execution, retry: Execution, faults: Fault[]): string {
  const iso = (t: number) => (Number.isFinite(t) ? new Date(t).toISOString().slice(11, 23) : "never");
  const times = (x: Execution) =>
    `${x.local ? "local " : ""}pid ${x.pid} attempt ${x.attempt} scheduled ${iso(x.from)} started ${iso(x.started)} done ${iso(x.done ?? Infinity)}`;
  const near = faults
    .filter(
      (f) => Math.abs(f.at - lost.started) <= TASK_LIFETIME_MS || Math.abs(f.at - retry.started) <= TASK_LIFETIME_MS,
    )
    .map((f) =>
      f.kind === "kill"
        ? `kill ${f.pid} ${iso(f.at)}`
        : f.kind === "stop"
          ? `stop ${f.pid} ${iso(f.at)}–${iso(f.until)}`
          : f.kind === "restart"
            ? `${f.what} restart ${iso(f.at)}–${iso(f.until)}`
            : `task lost ${iso(f.at)}`,
    );
  return `this: ${times(lost)}; recorded: ${times(retry)}; faults near: ${near.join(", ") || "none"}`;
}

/** Why `lost`'s effect is not explained as a retry that `retry` (the recorded execution) made, or undefined. */
function unexcused(lost: Execution, retry: Execution, faults: Fault[]): string | undefined {
  if (lost.id === retry.id) return "the same execution wrote it";
  if (!retry.local && retry.attempt <= lost.attempt)
    return `attempt ${lost.attempt} is not earlier than the recorded attempt ${retry.attempt}`;
  if (!faultBehind(lost, retry, faults))
    return `no SIGKILL, SIGSTOP, restart or lost workflow task cut that execution short before the recorded one started (${evidence(lost, retry, faults)})`;
  return undefined;
}

interface Verdict {
  excused: number;
  unexplained: string[];
}

/** Judges a call's executions against the recorded one; more than one effect of one execution is never excused. */
function judgeCall(execs: Execution[], recorded: Execution, faults: Fault[], once: boolean): Verdict {
  const verdict: Verdict = { excused: 0, unexplained: [] };
  for (const x of execs) {
    for (let i = 1; i < x.effects.length; i++)
      verdict.unexplained.push(`${show(x)}: ${x.effects.length} effects of one execution`);
    if (x === recorded) continue;
    const why = once ? "an idempotent: false tool ran again" : unexcused(x, recorded, faults);
    if (why) verdict.unexplained.push(`${show(x)}: ${why}`);
    else verdict.excused++;
  }
  return verdict;
}

/** A call whose recorded execution the soak does not know: the one that explains the most others stands for it. */
function judgeUnknown(execs: Execution[], faults: Fault[], once: boolean): Verdict {
  let best: Verdict | undefined;
  for (const r of execs) {
    const v = judgeCall(execs, r, faults, once);
    if (!best || v.unexplained.length < best.unexplained.length) best = v;
  }
  return best ?? { excused: 0, unexplained: [] };
}

function executionsOf(effects: LedgerEffect[], dones: Map<string, number>): Execution[] {
  const byId = new Map<string, Execution>();
  for (const e of effects) {
    const id = e.exec ?? `pid ${e.pid} attempt ${e.attempt}`;
    let x = byId.get(id);
    if (!x) {
      const started = e.started ?? e.t;
      x = {
        id,
        wf: e.wf,
        pid: e.pid,
        attempt: e.attempt,
        local: e.local === true || e.tool === "ledger_fast",
        started,
        from: Math.min(e.scheduled ?? started, started),
        done: e.exec !== undefined ? dones.get(`${e.wf}\u0000${e.call}\u0000${e.exec}`) : undefined,
        effects: [],
      };
      byId.set(id, x);
    }
    x.effects.push(e);
  }
  return [...byId.values()];
}

/** The exactly-once check over the ledger's lines, the runs' transcripts and the fault log: a pure function. */
export function judgeLedger(lines: LedgerLine[], runs: LedgerRun[], faults: Fault[]): LedgerReport {
  const byCall = new Map<string, LedgerEffect[]>();
  const dones = new Map<string, number>();
  let effects = 0;
  for (const line of lines) {
    if (line.kind === "done") {
      dones.set(`${line.wf}\u0000${line.call}\u0000${line.exec}`, line.t);
      continue;
    }
    effects++;
    const k = `${line.wf}\u0000${line.call}`;
    byCall.set(k, [...(byCall.get(k) ?? []), line]);
  }
  const report: LedgerReport = { effects, completedCalls: 0, faultRetries: 0, unexplained: 0, violations: [] };
  const judged = new Set<string>();
  const count = (run: string, call: string, entries: LedgerEffect[], v: Verdict) => {
    report.faultRetries += v.excused;
    if (v.unexplained.length === 0) return;
    report.unexplained += v.unexplained.length;
    report.violations.push({
      run,
      what: `${call}: ${entries.length} effects, ${v.unexplained.length} no retry explains: ${v.unexplained.join("; ")}`,
    });
  };
  for (const run of runs) {
    if (!run.messages) continue;
    for (const m of run.messages) {
      if (m.role !== "toolResult" || !m.toolName.startsWith("ledger_")) continue;
      const k = `${run.id}\u0000${m.toolCallId}`;
      judged.add(k);
      const entries = byCall.get(k) ?? [];
      const token = (m.details as { token?: string } | undefined)?.token;
      if (m.isError) {
        // interrupted idempotent: false call, or the cancelled gate: at most one effect, and none for the gate
        if (m.toolName === "ledger_guarded" && entries.length > 0)
          report.violations.push({
            run: run.id,
            what: `${m.toolCallId}: the cancelled gate ran (${entries.length} effects)`,
          });
        else if (entries.length > 1) {
          report.unexplained += entries.length - 1;
          report.violations.push({
            run: run.id,
            what: `${m.toolCallId}: ${entries.length} effects of an interrupted call`,
          });
        }
        continue;
      }
      report.completedCalls++;
      const recorded = entries.find((e) => e.token === token);
      if (!recorded)
        report.violations.push({
          run: run.id,
          what: `${m.toolCallId}: completed, but its effect (token ${token}) is not in the ledger`,
        });
      if (entries.length < 2) continue;
      const execs = executionsOf(entries, dones);
      const once = m.toolName === "ledger_once";
      const r = recorded && execs.find((x) => x.effects.includes(recorded));
      count(run.id, m.toolCallId, entries, r ? judgeCall(execs, r, faults, once) : judgeUnknown(execs, faults, once));
    }
  }
  // Every other call: a sub-agent's (a child workflow, whose transcript the soak does not fetch), or one with no
  // result in its run's transcript. A cancelled run's gate must have no effect; any other second effect is judged
  // against the execution that best explains the rest.
  const parents = new Set(runs.map((r) => r.id));
  for (const [k, entries] of byCall) {
    if (judged.has(k)) continue;
    const wf = k.split("\u0000")[0];
    if (parents.has(wf) && entries.some((e) => e.tool === "ledger_guarded")) {
      if (runs.find((r) => r.id === wf)?.messages)
        report.violations.push({
          run: wf,
          what: `${entries[0].call}: the gate ran without a result in the transcript`,
        });
      continue;
    }
    if (entries.length < 2) continue;
    const once = entries[0].tool === "ledger_once";
    count(wf, entries[0].call, entries, judgeUnknown(executionsOf(entries, dones), faults, once));
  }
  return report;
}

/** Runs with more than one effect of a local activity's call: the ones whose lost workflow tasks the check needs. */
export function runsWithLocalRepeats(file: string): string[] {
  const raw = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  const counts = new Map<string, number>();
  for (const line of raw.map((l) => JSON.parse(l) as LedgerLine)) {
    if (line.kind === "done" || !(line.local === true || line.tool === "ledger_fast")) continue;
    const k = `${line.wf}\u0000${line.call}`;
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return [...new Set([...counts].filter(([, n]) => n > 1).map(([k]) => k.split("\u0000")[0]))];
}

/** Reads the ledger file and judges it (`judgeLedger`); counts the duplicates `--sabotage` marked. */
export function checkLedger(file: string, runs: LedgerRun[], faults: Fault[]): LedgerReport {
  const raw = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  const lines = raw.map((l) => JSON.parse(l) as LedgerLine & { sabotage?: boolean });
  const injected = lines.filter((l) => l.sabotage).length;
  const report = judgeLedger(
    lines.map(({ sabotage: _, ...l }) => l as LedgerLine),
    runs,
    faults,
  );
  return injected ? { ...report, injected } : report;
}

/**
 * "The model never saw a context that differs from history": every model call (retries and calls a kill cut
 * included) must have been given exactly the recorded transcript before the answer history holds.
 */
export function checkContexts(
  file: string,
  runs: RunRecord[],
): { calls: number; violations: { run: string; what: string }[] } {
  const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  const byRun = new Map(runs.filter((r) => r.messages).map((r) => [r.id, withoutDetails(r.messages!)]));
  const digests = new Map<string, string>();
  const violations: { run: string; what: string }[] = [];
  let calls = 0;
  for (const line of lines) {
    const seen = JSON.parse(line) as { wf: string; n: number; digest: string; pid: number; t?: number; seen?: string };
    const recorded = byRun.get(seen.wf);
    if (!recorded) continue;
    calls++;
    if (recorded[seen.n]?.role !== "assistant") {
      violations.push({
        run: seen.wf,
        what: `a model call (pid ${seen.pid}) saw ${seen.n} messages; recorded message ${seen.n} is ${recorded[seen.n]?.role ?? "missing"}, not its answer`,
      });
      continue;
    }
    const key = `${seen.wf}\u0000${seen.n}`;
    let digest = digests.get(key);
    if (!digest) {
      digest = createHash("sha256")
        .update(canonical(recorded.slice(0, seen.n)))
        .digest("hex");
      digests.set(key, digest);
    }
    if (digest !== seen.digest) {
      // name the first message that differs, and how
      const saw = seen.seen ? (JSON.parse(seen.seen) as unknown[]) : [];
      const i = saw.findIndex((m, k) => canonical(m) !== canonical(recorded[k]));
      const diff =
        i < 0
          ? ""
          : `; message ${i}: seen ${canonical(saw[i]).slice(0, 600)} recorded ${canonical(recorded[i]).slice(0, 600)}`;
      violations.push({
        run: seen.wf,
        what: `a model call (pid ${seen.pid}, at ${seen.t ? new Date(seen.t).toISOString() : "?"}) saw ${seen.n} messages that differ from the recorded ones${diff}`,
      });
    }
  }
  return { calls, violations };
}
