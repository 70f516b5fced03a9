/** Scheduled agent runs on Temporal Schedules. Real server, faux model. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { getAgentRun, InvalidRunInputError } from "../src/client.js";
import {
  deleteAgentSchedule,
  describeAgentSchedule,
  listAgentSchedules,
  pauseAgentSchedule,
  scheduleAgentRun,
} from "../src/schedules.js";
import { fauxModel, openTestEnv, testWorker, uniqueId, within, type TestEnv } from "./helpers.js";

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

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
});
