/**
 * The ledger check: each completed tool call's effect happened exactly once.
 *
 * A completed call's result carries the token of the execution whose result history recorded; that execution's
 * ledger line must exist. Another line for the same run and call is a second effect. It is what Temporal
 * documents (at-least-once for idempotent tools) when the process that wrote it was SIGKILLed or SIGSTOPped
 * (its completion never reached the server, or came after the heartbeat timeout), or when it was written while
 * the server or the database restarted (the completion was lost on the way): those are counted as retries after
 * a fault. Any other second effect, and any second effect of an `idempotent: false` tool, is a violation; so is
 * an effect of a call that must never have run (the approval gate of a cancelled run).
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { canonical, withoutDetails } from "./script-model.js";
import type { RunRecord } from "./workload.js";

interface Entry {
  wf: string;
  call: string;
  tool: string;
  key: string;
  attempt: number;
  pid: number;
  token: string;
  t: number;
}

export interface LedgerReport {
  effects: number;
  completedCalls: number;
  /** Second effects explained by a fault (killed/frozen writer, server or database restart). */
  faultRetries: number;
  violations: { run: string; what: string }[];
}

export function checkLedger(
  file: string,
  runs: RunRecord[],
  faulted: { pids: Set<number>; windows: [number, number][] },
): LedgerReport {
  const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
  const byCall = new Map<string, Entry[]>();
  for (const line of lines) {
    const e = JSON.parse(line) as Entry;
    const k = `${e.wf}\u0000${e.call}`;
    byCall.set(k, [...(byCall.get(k) ?? []), e]);
  }
  const report: LedgerReport = { effects: lines.length, completedCalls: 0, faultRetries: 0, violations: [] };
  const explained = (e: Entry) => faulted.pids.has(e.pid) || faulted.windows.some(([a, b]) => e.t >= a && e.t <= b);
  for (const run of runs) {
    if (!run.messages) continue;
    const seen = new Set<string>();
    for (const m of run.messages) {
      if (m.role !== "toolResult" || !m.toolName.startsWith("ledger_")) continue;
      const k = `${run.id}\u0000${m.toolCallId}`;
      seen.add(k);
      const entries = byCall.get(k) ?? [];
      const token = (m.details as { token?: string } | undefined)?.token;
      if (m.isError) {
        // interrupted idempotent: false call, or the cancelled gate: at most one effect, and none for the gate
        if (m.toolName === "ledger_guarded" && entries.length > 0)
          report.violations.push({
            run: run.id,
            what: `${m.toolCallId}: the cancelled gate ran (${entries.length} effects)`,
          });
        else if (entries.length > 1)
          report.violations.push({
            run: run.id,
            what: `${m.toolCallId}: ${entries.length} effects of an interrupted call`,
          });
        continue;
      }
      report.completedCalls++;
      if (!entries.some((e) => e.token === token))
        report.violations.push({
          run: run.id,
          what: `${m.toolCallId}: completed, but its effect (token ${token}) is not in the ledger`,
        });
      const others = entries.filter((e) => e.token !== token);
      if (others.length === 0) continue;
      if (m.toolName === "ledger_once")
        report.violations.push({
          run: run.id,
          what: `${m.toolCallId}: idempotent: false tool ran ${entries.length} times`,
        });
      else if (others.every(explained)) report.faultRetries += others.length;
      else
        report.violations.push({
          run: run.id,
          what: `${m.toolCallId}: ${entries.length} effects, ${others.filter((e) => !explained(e)).length} by a worker no fault touched: ${JSON.stringify(others)}`,
        });
    }
    // Effects of calls with no result in the transcript: a cancelled run's gate must have none.
    for (const [k, entries] of byCall) {
      if (!k.startsWith(`${run.id}\u0000`) || seen.has(k)) continue;
      if (entries.some((e) => e.tool === "ledger_guarded"))
        report.violations.push({
          run: run.id,
          what: `${entries[0].call}: the gate ran without a result in the transcript`,
        });
    }
  }
  // Sub-agents' calls (child workflows, whose transcripts the soak does not fetch): no second effect unexplained.
  const parents = new Set(runs.map((r) => r.id));
  for (const [k, entries] of byCall) {
    const wf = k.split("\u0000")[0];
    if (parents.has(wf) || entries.length < 2) continue;
    // one effect is the recorded one; every other must have been written by a faulted worker or in a restart
    const unexplained = entries.filter((e) => !explained(e)).length;
    if (unexplained <= 1 && entries[0].tool !== "ledger_once") report.faultRetries += entries.length - 1;
    else
      report.violations.push({
        run: wf,
        what: `${entries[0].call}: ${entries.length} effects: ${JSON.stringify(entries)}`,
      });
  }
  return report;
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
