/**
 * The soak's exactly-once check (scripts/soak/ledger.ts, `judgeLedger`): a second effect of a tool call is
 * excused only when a retry could have written it — another, earlier attempt whose worker was killed or frozen
 * while it held the call, before the recorded attempt started. Driven with ledger lines, transcripts and fault
 * logs written out by hand: no soak, no server.
 */
import { describe, expect, it } from "@jest/globals";
import {
  COMPLETION_SLACK_MS,
  judgeLedger,
  type Fault,
  type LedgerEffect,
  type LedgerLine,
  type LedgerRun,
} from "../../scripts/soak/ledger.js";

const T0 = Date.parse("2026-12-03T18:50:00Z");
const WF = "soak-tools-1";
const CALL = "call-a";

/** One execution of the call: its effect at `t` (and its completion record `doneAfter` ms later, if it has one). */
function execution(o: {
  exec: string;
  pid: number;
  attempt: number;
  started: number;
  t: number;
  token: string;
  doneAfter?: number;
  tool?: string;
  local?: boolean;
}): LedgerLine[] {
  const effect: LedgerEffect = {
    wf: WF,
    call: CALL,
    tool: o.tool ?? "ledger_write",
    key: "k1",
    attempt: o.attempt,
    pid: o.pid,
    token: o.token,
    t: o.t,
    exec: o.exec,
    scheduled: o.started - 5,
    started: o.started,
    local: o.local ?? false,
  };
  const done: LedgerLine[] =
    o.doneAfter === undefined
      ? []
      : [{ kind: "done", wf: WF, call: CALL, exec: o.exec, attempt: o.attempt, pid: o.pid, t: o.t + o.doneAfter }];
  return [effect, ...done];
}

/** The run's transcript: the call's result carries the recorded execution's token. */
function run(token: string, toolName = "ledger_write"): LedgerRun {
  return {
    id: WF,
    messages: [
      {
        role: "toolResult",
        toolCallId: CALL,
        toolName,
        content: [{ type: "text", text: "ok k1" }],
        details: { token },
        isError: false,
        timestamp: T0 + 60000,
      },
    ],
  } as LedgerRun;
}

/**
 * Attempt 1 on pid 101 writes its effect at T0+300; attempt 2 on pid 202 starts at T0+7000 and is the one
 * recorded. Whether the first is excused depends on `first` (its completion record) and the faults.
 */
function retried(faults: Fault[], first: { doneAfter?: number } = {}) {
  const lines = [
    ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1", ...first }),
    ...execution({ exec: "x2", pid: 202, attempt: 2, started: T0 + 7000, t: T0 + 7300, token: "tok-2", doneAfter: 1 }),
  ];
  return judgeLedger(lines, [run("tok-2")], faults);
}

describe("the soak's exactly-once check", () => {
  it("a second effect from the same attempt is a violation, whatever happened to its worker", () => {
    // the same pid and attempt (one execution) writing twice; the worker was killed right after, and the
    // recorded attempt is that one
    const lines: LedgerLine[] = [
      ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1" }),
      ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 302, token: "tok-dup" }),
    ];
    const report = judgeLedger(lines, [run("tok-1")], [{ kind: "kill", pid: 101, at: T0 + 400 }]);
    expect(report.unexplained).toBe(1);
    expect(report.faultRetries).toBe(0);
    expect(report.violations).toHaveLength(1);
    expect(report.violations[0].what).toMatch(/2 effects of one execution/);
  });

  it("the same attempt number without execution ids (an older ledger) is one execution too", () => {
    const lines: LedgerLine[] = [
      { wf: WF, call: CALL, tool: "ledger_write", key: "k1", attempt: 1, pid: 101, token: "tok-1", t: T0 + 300 },
      { wf: WF, call: CALL, tool: "ledger_write", key: "k1", attempt: 1, pid: 101, token: "tok-dup", t: T0 + 302 },
    ];
    const report = judgeLedger(lines, [run("tok-1")], [{ kind: "kill", pid: 101, at: T0 + 400 }]);
    expect(report.unexplained).toBe(1);
    expect(report.violations).toHaveLength(1);
  });

  it("a later attempt's effect is excused when the first writer was killed between its effect and its completion", () => {
    // killed 200 ms after its effect, with no completion record; attempt 2 started after the kill
    const report = retried([{ kind: "kill", pid: 101, at: T0 + 500 }]);
    expect(report.violations).toEqual([]);
    expect(report.faultRetries).toBe(1);
    expect(report.unexplained).toBe(0);
  });

  it("a later attempt's effect is excused when the first writer was frozen while it held the call", () => {
    const frozenAfterEffect = retried([{ kind: "stop", pid: 101, at: T0 + 350, until: T0 + 8000 }], {
      doneAfter: 7700,
    });
    expect(frozenAfterEffect.violations).toEqual([]);
    expect(frozenAfterEffect.faultRetries).toBe(1);
    // frozen before it wrote: its effect (and completion) came after SIGCONT, after the retry's
    const lines = [
      ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 8001, token: "tok-1", doneAfter: 1 }),
      ...execution({
        exec: "x2",
        pid: 202,
        attempt: 2,
        started: T0 + 7000,
        t: T0 + 7300,
        token: "tok-2",
        doneAfter: 1,
      }),
    ];
    const frozenBefore = judgeLedger(
      lines,
      [run("tok-2")],
      [{ kind: "stop", pid: 101, at: T0 + 100, until: T0 + 8000 }],
    );
    expect(frozenBefore.violations).toEqual([]);
    expect(frozenBefore.faultRetries).toBe(1);
  });

  it("a later attempt's effect is a violation when the first writer was faulted only after completing", () => {
    // completed 50 ms after its effect; killed a minute later
    const killedLater = retried([{ kind: "kill", pid: 101, at: T0 + 60000 }], { doneAfter: 50 });
    expect(killedLater.unexplained).toBe(1);
    expect(killedLater.violations).toHaveLength(1);
    // frozen just after the slack the result has to leave the process
    const frozenAfter = retried(
      [{ kind: "stop", pid: 101, at: T0 + 350 + COMPLETION_SLACK_MS + 1, until: T0 + 10000 }],
      { doneAfter: 50 },
    );
    expect(frozenAfter.unexplained).toBe(1);
    // killed minutes later, with no completion record: the retry started long before the fault
    const noRecord = retried([{ kind: "kill", pid: 101, at: T0 + 5 * 60000 }]);
    expect(noRecord.unexplained).toBe(1);
  });

  it("a later attempt's effect is a violation when the first writer was faulted long before", () => {
    const report = retried([{ kind: "stop", pid: 101, at: T0 - 120000, until: T0 - 110000 }], { doneAfter: 50 });
    expect(report.unexplained).toBe(1);
    expect(report.violations).toHaveLength(1);
    // another worker's fault explains nothing
    expect(retried([{ kind: "kill", pid: 303, at: T0 + 500 }]).unexplained).toBe(1);
  });

  it("an earlier attempt's effect is a violation when the recorded attempt is not a later one", () => {
    const lines = [
      ...execution({ exec: "x1", pid: 101, attempt: 2, started: T0, t: T0 + 300, token: "tok-1" }),
      ...execution({
        exec: "x2",
        pid: 202,
        attempt: 2,
        started: T0 + 7000,
        t: T0 + 7300,
        token: "tok-2",
        doneAfter: 1,
      }),
    ];
    const report = judgeLedger(lines, [run("tok-2")], [{ kind: "kill", pid: 101, at: T0 + 500 }]);
    expect(report.unexplained).toBe(1);
  });

  it("a local activity's attempts start again at 1 on another worker: a different execution is enough", () => {
    const lines = [
      ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1", local: true }),
      ...execution({
        exec: "x2",
        pid: 202,
        attempt: 1,
        started: T0 + 7000,
        t: T0 + 7300,
        token: "tok-2",
        doneAfter: 1,
        local: true,
      }),
    ];
    const report = judgeLedger(lines, [run("tok-2", "ledger_fast")], [{ kind: "kill", pid: 101, at: T0 + 500 }]);
    expect(report.violations).toEqual([]);
    expect(report.faultRetries).toBe(1);
  });

  it("a local activity ran again after the workflow task that ran it was lost (history: timed out): excused, and only so", () => {
    // The soak's hour (issue 58): a sticky task reached its worker 8 s late under load; its local activities ran,
    // the server timed the task out before it completed, and the next attempt on another worker ran them again.
    const local = (exec: string, pid: number, started: number, token: string, doneAfter?: number) =>
      execution({
        exec,
        pid,
        attempt: 1,
        started,
        t: started + 200,
        token,
        local: true,
        tool: "ledger_fast",
        doneAfter,
      });
    const lines = [...local("x1", 17168, T0, "tok-1", 1), ...local("x2", 9896, T0 + 2015, "tok-2", 1)];
    const lostAt = T0 + 1970;
    const judge = (faults: Fault[], toolLines = lines) => judgeLedger(toolLines, [run("tok-2", "ledger_fast")], faults);
    expect(judge([{ kind: "task", wf: WF, at: lostAt }])).toMatchObject({ violations: [], faultRetries: 1 });
    // No lost task in history: nothing explains it.
    expect(judge([]).violations).toHaveLength(1);
    // Another run's lost task, or one lost before the first execution began or after the recorded one started: no.
    expect(judge([{ kind: "task", wf: "another-run", at: lostAt }]).violations).toHaveLength(1);
    expect(judge([{ kind: "task", wf: WF, at: T0 - 31000 }]).violations).toHaveLength(1);
    expect(judge([{ kind: "task", wf: WF, at: T0 + 2100 }]).violations).toHaveLength(1);
    // A regular activity does not run inside a workflow task: a lost task explains none of its repeats.
    const regular = [
      ...execution({ exec: "y1", pid: 1, attempt: 1, started: T0, t: T0 + 200, token: "tok-1", doneAfter: 1 }),
      ...execution({ exec: "y2", pid: 2, attempt: 2, started: T0 + 2015, t: T0 + 2215, token: "tok-2", doneAfter: 1 }),
    ];
    expect(judgeLedger(regular, [run("tok-2")], [{ kind: "task", wf: WF, at: lostAt }]).violations).toHaveLength(1);
  });

  it("a frozen worker's stale workflow task ran its local activities on waking: the freeze excuses them, and only so", () => {
    // The soak in CI (2026-12-05): pid 12119 was frozen 8.3 s; a workflow task handed to it as it stopped timed out
    // (2 s) and ran elsewhere; on SIGCONT the worker ran the stale task anyway, its local activity 0.5 s later.
    const frozenAt = T0 - 8300;
    const until = T0 - 500;
    const lines = (o: { pid?: number; started?: number; local?: boolean } = {}) => [
      ...execution({
        exec: "x1",
        pid: o.pid ?? 12119,
        attempt: 1,
        started: o.started ?? T0,
        t: (o.started ?? T0) + 200,
        token: "tok-1",
        local: o.local ?? true,
        tool: o.local === false ? "ledger_write" : "ledger_fast",
        doneAfter: 1,
      }),
      ...execution({
        exec: "x2",
        pid: 202,
        attempt: 2,
        started: frozenAt + 4000,
        t: frozenAt + 4200,
        token: "tok-2",
        local: o.local ?? true,
        tool: o.local === false ? "ledger_write" : "ledger_fast",
        doneAfter: 1,
      }),
    ];
    const freeze: Fault = { kind: "stop", pid: 12119, at: frozenAt, until };
    const judge = (l: LedgerLine[], tool = "ledger_fast") => judgeLedger(l, [run("tok-2", tool)], [freeze]);
    expect(judge(lines())).toMatchObject({ violations: [], faultRetries: 1 });
    // Another worker's freeze, a start long after waking, or a regular activity scheduled after waking: no.
    const other = judge(lines({ pid: 303 })).violations;
    expect(other).toHaveLength(1);
    // The violation names both executions' times and the faults near them, for a reader of CI's output.
    expect(other[0].what).toMatch(/this: local pid 303 attempt 1 .*recorded: local pid 202 .*faults near: stop 12119 /);
    expect(judge(lines({ started: until + 10500 })).violations).toHaveLength(1);
    expect(judge(lines({ local: false }), "ledger_write").violations).toHaveLength(1);
  });

  it("a retried workflow task's later attempts are not in history: a local activity repeated in one is excused", () => {
    // History records the first lost attempt only; the second (on pid 2, also lost) ran the call again before
    // the third completed with the recorded execution.
    const local = (exec: string, pid: number, started: number, token: string) =>
      execution({ exec, pid, attempt: 1, started, t: started + 200, token, local: true, tool: "ledger_fast" });
    const lines = [
      ...local("x1", 1, T0, "tok-1"),
      ...local("x2", 2, T0 + 5000, "tok-2"),
      ...local("x3", 3, T0 + 8000, "tok-3"),
    ];
    const lost: Fault = { kind: "task", wf: WF, at: T0 + 2000 };
    expect(judgeLedger(lines, [run("tok-3", "ledger_fast")], [lost])).toMatchObject({
      violations: [],
      faultRetries: 2,
    });
    // With no recorded loss nothing explains the repeats.
    expect(judgeLedger(lines, [run("tok-3", "ledger_fast")], []).violations).toHaveLength(1);
  });

  it("the shape --sabotage injects (same pid, same attempt, 2 ms apart) is always a violation", () => {
    // the injected line in the recorded execution, in a killed one that a retry followed, and in a sub-agent's
    // call (no transcript: the check picks the execution that explains the rest)
    const recorded = judgeLedger(
      [
        ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1" }),
        ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 302, token: "tok-dup", doneAfter: 1 }),
      ],
      [run("tok-1")],
      [
        { kind: "kill", pid: 101, at: T0 + 303 },
        { kind: "stop", pid: 101, at: T0 + 301, until: T0 + 9000 },
        { kind: "restart", what: "server", at: T0, until: T0 + 3000 },
      ],
    );
    expect(recorded.unexplained).toBe(1);
    const inLostAttempt = judgeLedger(
      [
        ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1" }),
        ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 302, token: "tok-dup" }),
        ...execution({
          exec: "x2",
          pid: 202,
          attempt: 2,
          started: T0 + 7000,
          t: T0 + 7300,
          token: "tok-2",
          doneAfter: 1,
        }),
      ],
      [run("tok-2")],
      [{ kind: "kill", pid: 101, at: T0 + 500 }],
    );
    expect(inLostAttempt.faultRetries).toBe(1);
    expect(inLostAttempt.unexplained).toBe(1);
    const subAgent = judgeLedger(
      [
        ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1" }),
        ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 302, token: "tok-dup", doneAfter: 1 }),
      ],
      [],
      [{ kind: "kill", pid: 101, at: T0 + 303 }],
    );
    expect(subAgent.unexplained).toBe(1);
    expect(subAgent.violations[0].run).toBe(WF);
  });

  it("an idempotent: false tool never has a second effect, retry or not", () => {
    const lines = [
      ...execution({ exec: "x1", pid: 101, attempt: 1, started: T0, t: T0 + 300, token: "tok-1", tool: "ledger_once" }),
      ...execution({
        exec: "x2",
        pid: 202,
        attempt: 2,
        started: T0 + 7000,
        t: T0 + 7300,
        token: "tok-2",
        doneAfter: 1,
        tool: "ledger_once",
      }),
    ];
    const report = judgeLedger(lines, [run("tok-2", "ledger_once")], [{ kind: "kill", pid: 101, at: T0 + 500 }]);
    expect(report.unexplained).toBe(1);
  });

  it("a server restart while the first attempt held the call excuses the retry's effect", () => {
    const report = retried([{ kind: "restart", what: "server", at: T0 + 200, until: T0 + 3000 }], { doneAfter: 50 });
    expect(report.violations).toEqual([]);
    expect(report.faultRetries).toBe(1);
    const before = retried([{ kind: "restart", what: "server", at: T0 - 60000, until: T0 - 57000 }], { doneAfter: 50 });
    expect(before.unexplained).toBe(1);
  });
});
