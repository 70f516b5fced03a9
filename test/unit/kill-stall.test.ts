/**
 * The kill-stall bench's measure (bench/kill-stall.ts) on hand-built histories: pure, no server. As Temporal
 * writes them, an attempt's Started event comes just before its Completed (or Failed, TimedOut) event, with the
 * time the attempt started.
 */
import { describe, expect, it } from "@jest/globals";
import type proto from "@temporalio/proto";
import Long from "long";
import { stallMs } from "../../bench/kill-stall.js";

type Event = proto.temporal.api.history.v1.IHistoryEvent;
const at = (ms: number) => ({ seconds: Long.fromNumber(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1e6 });
const ev = (id: number, ms: number, attrs: Event): Event => ({
  eventId: Long.fromNumber(id),
  eventTime: at(ms),
  ...attrs,
});
const scheduled = (id: number, ms: number) => ev(id, ms, { activityTaskScheduledEventAttributes: {} });
const started = (id: number, ms: number, scheduledEventId: number, attempt = 1) =>
  ev(id, ms, { activityTaskStartedEventAttributes: { scheduledEventId: Long.fromNumber(scheduledEventId), attempt } });
const completed = (id: number, ms: number, startedEventId: number) =>
  ev(id, ms, { activityTaskCompletedEventAttributes: { startedEventId: Long.fromNumber(startedEventId) } });
const timedOut = (id: number, ms: number) => ev(id, ms, { activityTaskTimedOutEventAttributes: {} });
const finished = (id: number, ms: number) => ev(id, ms, { workflowExecutionCompletedEventAttributes: {} });

const KILL = 100_000;

describe("stallMs", () => {
  it("a routed model call lost with the worker: to the start of the call scheduled in its place, not its end", () => {
    const events = [
      scheduled(10, KILL - 3000),
      started(11, KILL - 2900, 10),
      timedOut(12, KILL + 4500), // heartbeat timeout: the streaming before the kill is thrown away
      scheduled(16, KILL + 7000),
      started(17, KILL + 7200, 16),
      completed(18, KILL + 12_000, 17), // the redo's own 5 s are not the recovery's
    ];
    expect(stallMs(events, KILL)).toBe(7200);
  });

  it("a run busy on a survivor at the kill stands still only while nothing of it runs", () => {
    const events = [
      scheduled(10, KILL - 1000),
      started(11, KILL - 900, 10),
      completed(12, KILL + 3000, 11),
      scheduled(16, KILL + 4500),
      started(17, KILL + 4600, 16),
    ];
    expect(stallMs(events, KILL)).toBe(1600);
  });

  it("a call queued at the kill that starts late: its wait in the queue is stall, its run is not", () => {
    const events = [
      scheduled(10, KILL - 100),
      started(11, KILL + 3000, 10),
      completed(12, KILL + 3050, 11),
      scheduled(16, KILL + 3300),
      started(17, KILL + 3400, 16),
    ];
    expect(stallMs(events, KILL)).toBe(3350);
  });

  it("a call sent to the dead worker's queue after the kill never starts: the call that does ends the stall", () => {
    const events = [
      scheduled(10, KILL - 500),
      started(11, KILL - 400, 10),
      completed(12, KILL + 200, 11), // a tool on a survivor
      scheduled(16, KILL + 1500), // the run's next model call, routed to the killed worker's queue
      timedOut(17, KILL + 3500), // schedule-to-start
      scheduled(21, KILL + 3800),
      started(22, KILL + 3900, 21),
    ];
    expect(stallMs(events, KILL)).toBe(3900 - 200); // the tool ran 200 ms of it
  });

  it("a lost call retried by Temporal (shared queue): the backoff counts, the retried attempt's run does not", () => {
    const events = [
      scheduled(10, KILL - 1000),
      started(11, KILL + 6500, 10, 2), // heartbeat timeout at ~4.5 s, 2 s backoff, then attempt 2 for 5 s
      completed(12, KILL + 11_500, 11),
      scheduled(16, KILL + 11_700),
      started(17, KILL + 11_800, 16),
    ];
    expect(stallMs(events, KILL)).toBe(11_800 - 5000);
  });

  it("a run that ends without another activity: to its end", () => {
    const events = [
      scheduled(10, KILL - 500),
      started(11, KILL - 400, 10),
      completed(12, KILL + 100, 11),
      finished(16, KILL + 6000), // its workflow task was lost with the worker
    ];
    expect(stallMs(events, KILL)).toBe(5900);
  });

  it("a run that continues as new across the kill: to the next run's first activity, its ids its own", () => {
    const first = [
      scheduled(10, KILL - 500),
      started(11, KILL - 400, 10),
      completed(12, KILL + 300, 11), // a tool call that ran 300 ms of the stall on a survivor
      ev(16, KILL + 5200, { workflowExecutionContinuedAsNewEventAttributes: {} }),
    ];
    // The next run numbers its events from 1 again: its activity 10 is not the first run's.
    const next = [scheduled(5, KILL + 5600), started(6, KILL + 5800, 5), completed(7, KILL + 6000, 6)];
    expect(stallMs([first, next], KILL)).toBe(5800 - 300);
    expect(stallMs(first, KILL)).toBeUndefined();
  });

  it("nothing after the kill yet: no figure", () => {
    expect(stallMs([scheduled(10, KILL - 500), started(11, KILL - 400, 10)], KILL)).toBeUndefined();
  });
});
