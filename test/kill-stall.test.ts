/** The scale bench's failover measure (bench/kill-stall.ts) on hand-built histories: pure, no server. */
import { describe, expect, it } from "@jest/globals";
import type proto from "@temporalio/proto";
import Long from "long";
import { stallMs } from "../bench/kill-stall.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const at = (ms: number) => ({ seconds: Long.fromNumber(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 });
const scheduled = (id: number, ms: number): Event => ({
  eventId: Long.fromNumber(id),
  eventTime: at(ms),
  activityTaskScheduledEventAttributes: {},
});
const started = (id: number, ms: number, scheduledEventId: number, attempt = 1): Event => ({
  eventId: Long.fromNumber(id),
  eventTime: at(ms),
  activityTaskStartedEventAttributes: { scheduledEventId: Long.fromNumber(scheduledEventId), attempt },
});
const completed = (id: number, ms: number, startedEventId: number): Event => ({
  eventId: Long.fromNumber(id),
  eventTime: at(ms),
  activityTaskCompletedEventAttributes: { startedEventId: Long.fromNumber(startedEventId) },
});
const timedOut = (id: number, ms: number): Event => ({
  eventId: Long.fromNumber(id),
  eventTime: at(ms),
  activityTaskTimedOutEventAttributes: {},
});

const KILL = 100_000;

describe("stallMs", () => {
  it("a model call lost with the worker: from the kill to the start of the call scheduled in its place", () => {
    const events = [
      scheduled(10, KILL - 3000),
      started(11, KILL - 2900, 10),
      timedOut(12, KILL + 4500), // heartbeat timeout: the streaming work before the kill is thrown away
      scheduled(16, KILL + 7000),
      started(17, KILL + 7200, 16),
      completed(18, KILL + 12_000, 17), // the redo's own 5 s are not the failover's
    ];
    expect(stallMs(events, KILL)).toBe(7200);
  });

  it("a run busy on a survivor at the kill stands still only from the end of that work", () => {
    const events = [
      scheduled(10, KILL - 1000),
      started(11, KILL - 900, 10),
      completed(12, KILL + 3000, 11),
      scheduled(16, KILL + 4500),
      started(17, KILL + 4600, 16),
    ];
    expect(stallMs(events, KILL)).toBe(1600);
  });

  it("a model call that started on a survivor just after the kill is work too, not standing still", () => {
    const events = [
      scheduled(10, KILL - 100),
      started(11, KILL + 40, 10),
      completed(12, KILL + 5400, 11),
      scheduled(16, KILL + 7200), // its workflow task waited out the dead sticky queue and a replay
      started(17, KILL + 7300, 16),
    ];
    expect(stallMs(events, KILL)).toBe(1900);
  });

  it("a tool call lost with the worker: its retry is part of the stall, up to the run's next activity", () => {
    const events = [
      scheduled(10, KILL - 500),
      started(11, KILL + 5600, 10, 2), // the retry's start: after the kill, so not work the run was busy with
      completed(12, KILL + 5700, 11),
      scheduled(16, KILL + 7500), // the workflow task that took the result waited out the dead sticky queue
      started(17, KILL + 7600, 16),
    ];
    expect(stallMs(events, KILL)).toBe(7600);
  });

  it("nothing scheduled after the kill: no figure", () => {
    expect(stallMs([scheduled(10, KILL - 500), started(11, KILL - 400, 10)], KILL)).toBeUndefined();
  });
});
