/** Scheduled agent runs on Temporal Schedules. Real server, faux model. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { spawnSync } from "node:child_process";
import { getAgentRun, InvalidRunInputError } from "../../src/client/client.js";
import {
  deleteAgentSchedule,
  describeAgentSchedule,
  InvalidScheduleError,
  listAgentSchedules,
  pauseAgentSchedule,
  scheduleAgentRun,
} from "../../src/client/schedules.js";
import { fauxModel, testWorker, uniqueId, within, withServer } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

const env = withServer();

describe("scheduled runs", () => {
  it("a 2 s interval fires at least 3 runs that complete; pause stops it", async () => {
    const faux = fauxModel(Array.from({ length: 30 }, () => () => fauxAssistantMessage("tick")));
    const { worker, taskQueue } = await testWorker(env, []);
    const scheduleId = uniqueId("sched");
    await scheduleAgentRun(env.client, {
      scheduleId,
      spec: { interval: "2s" },
      overlap: "buffer_one",
      taskQueue,
      model: faux.getModel(),
      prompt: "tick",
    });
    try {
      const { runs, paused } = await worker.runUntil(async () => {
        // Polls the schedule's own record of what it started (no timer stands in for an event).
        const fired = await within(
          (async () => {
            for (;;) {
              const info = await describeAgentSchedule(env.client, scheduleId);
              if (info.recentRuns.length >= 3) return info.recentRuns.slice(0, 3);
              await new Promise((r) => setTimeout(r, 250));
            }
          })(),
          60_000,
          "three firings",
        );
        const runs = await Promise.all(fired.map((id) => getAgentRun(env.client, id).result()));
        await pauseAgentSchedule(env.client, scheduleId, "test pause");
        const atPause = (await env.client.schedule.getHandle(scheduleId).describe()).info.numActionsTaken;
        // Absence of firings can only be observed over time: 2.5 intervals.
        await new Promise((r) => setTimeout(r, 5000));
        const after = await env.client.schedule.getHandle(scheduleId).describe();
        return { runs, paused: { atPause, after: after.info.numActionsTaken, state: after.state.paused } };
      });
      expect(runs.map((r) => r.stopReason)).toEqual(["stop", "stop", "stop"]);
      expect(paused.state).toBe(true);
      expect(paused.after).toBe(paused.atPause);
      const listed = await listAgentSchedules(env.client);
      expect(listed.find((s) => s.scheduleId === scheduleId)).toMatchObject({ paused: true, note: "test pause" });
    } finally {
      await deleteAgentSchedule(env.client, scheduleId);
    }
  });

  it("a bad run input creates nothing and names the field", async () => {
    const scheduleId = uniqueId("sched-bad");
    await expect(
      scheduleAgentRun(env.client, {
        scheduleId,
        spec: { interval: "1h" },
        model: "faux/x",
        prompt: "hi",
        maxTurns: 0,
      }),
    ).rejects.toThrow(new InvalidRunInputError('Invalid run input: "maxTurns" must be a positive integer'));
    await expect(scheduleAgentRun(env.client, { scheduleId, spec: {}, model: "faux/x", prompt: "hi" })).rejects.toThrow(
      /needs "cron" or "interval"/,
    );
    await expect(env.client.schedule.getHandle(scheduleId).describe()).rejects.toThrow();
  });

  it("bad schedule options give a typed error naming the field, and create nothing", async () => {
    const run = { model: "faux/x", prompt: "hi" };
    const cases: [string, Record<string, unknown>][] = [
      ["scheduleId", { scheduleId: "", spec: { interval: "1h" } }],
      ["spec", { spec: undefined }],
      ["spec", { spec: "daily" }],
      ["spec", { spec: {} }],
      ["spec.every", { spec: { every: "1h" } }],
      ["spec.cron", { spec: { cron: 5 } }],
      ["spec.cron", { spec: { cron: "hello" } }],
      ["spec.cron", { spec: { cron: "99 * * * *" } }],
      ["spec.cron", { spec: { cron: "*/0 * * * *" } }],
      ["spec.cron", { spec: { cron: "0 0 L * *" } }],
      ["spec.cron", { spec: { cron: "@fortnightly" } }],
      ["spec.cron", { spec: { cron: "5-1 * * * *" } }],
      ["spec.cron", { spec: { cron: "0 0 * * # every day" } }],
      ["spec.cron", { spec: { cron: [] } }],
      ["spec.cron[1]", { spec: { cron: ["0 9 * * MON-FRI", "0 9 * FOO *"] } }],
      ["spec.cron[0]", { spec: { cron: ["CRON_TZ=UTC 0 9 * * *"], timezone: "Europe/Paris" } }],
      ["spec.interval", { spec: { interval: "soon" } }],
      ["spec.interval", { spec: { interval: 0 } }],
      ["spec.interval", { spec: { interval: "500ms" } }],
      ["spec.timezone", { spec: { cron: "0 9 * * *", timezone: "Mars/Base" } }],
      ["overlap", { spec: { interval: "1h" }, overlap: "sometimes" }],
      ["taskQueue", { spec: { interval: "1h" }, taskQueue: "" }],
      // Past the checks made here, the server's refusal is reported the same way.
      ["spec.cron", { spec: { cron: "0 0 * * 1%2" } }],
    ];
    for (const [field, options] of cases) {
      const scheduleId = uniqueId("sched-bad");
      const err = await scheduleAgentRun(env.client, { ...run, scheduleId, ...options } as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect([field, err]).toEqual([field, expect.any(InvalidScheduleError)]);
      expect(err).toBeInstanceOf(InvalidRunInputError);
      expect((err as InvalidScheduleError).field).toBe(field);
      expect((err as Error).message).toContain(`Invalid schedule: "${field}"`);
      await expect(env.client.schedule.getHandle(scheduleId).describe()).rejects.toThrow(/not found/i);
    }
    // The run input is checked too, with startAgentRun's message naming its field.
    const scheduleId = uniqueId("sched-bad");
    await expect(
      scheduleAgentRun(env.client, { scheduleId, spec: { cron: "0 9 * * *" }, model: "nope", prompt: "hi" }),
    ).rejects.toThrow(
      new InvalidRunInputError('Invalid run input: "model" must be "provider/modelId" or a Model object, got "nope"'),
    );
    await expect(env.client.schedule.getHandle(scheduleId).describe()).rejects.toThrow(/not found/i);
    // Good forms of each field pass (and are deleted again).
    for (const spec of [
      { cron: "0 9 * * MON-FRI", timezone: "Europe/Paris" },
      { cron: ["@daily", "@every 1h/5m", "0 0 1 jan *", "0 9 * * 1-5 # weekdays", "0 0 9 * * * 2030"] },
      { interval: 60_000 },
    ]) {
      const id = uniqueId("sched-good");
      await scheduleAgentRun(env.client, { ...run, scheduleId: id, spec, paused: true });
      await deleteAgentSchedule(env.client, id);
    }
  });

  it("the schedule command reports a bad option by its field and exits 2", () => {
    const scheduleId = uniqueId("sched-cli");
    const cli = spawnSync(
      process.execPath,
      [
        ...nodeEntry("src/cli/schedule.ts"),
        "create",
        scheduleId,
        "--model",
        "faux/x",
        "--prompt",
        "hi",
        "--cron",
        "0 25 * * *",
      ],
      { env: { ...process.env, NODE_OPTIONS: "" }, encoding: "utf8", timeout: 60_000 },
    );
    expect(cli.stderr).toContain('Invalid schedule: "spec.cron" has hour 25, not in range [0-23]');
    expect(cli.status).toBe(2);
  });
});
