/**
 * A reader that attaches before a run's first event (every worker now announces its run server, so a client finds
 * it within the run's first workflow task) is woken by that event, not by its idle timeout. Pure.
 */
import { describe, expect, it } from "@jest/globals";
import { EventTap } from "../../src/worker/events/tap.js";

describe("the event tap's early readers", () => {
  it("wakes a reader waiting on a run it holds nothing of yet as soon as the run's first event arrives", async () => {
    const tap = new EventTap();
    const started = Date.now();
    const woken = tap.wait("early", 60_000);
    tap.append({ workflowId: "early", runId: "r" }, { type: "agent_start" });
    await woken;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(tap.since("early", -1).map((e) => e.event.type)).toEqual(["agent_start"]);
  });

  it("forgets a reader that timed out, and events of other runs do not wake it", async () => {
    const tap = new EventTap();
    let woke = false;
    const waiting = tap.wait("quiet", 50).then(() => (woke = true));
    tap.append({ workflowId: "other", runId: "r" }, { type: "agent_start" });
    await Promise.resolve();
    expect(woke).toBe(false);
    await waiting;
    expect((tap as unknown as { waiting: Map<string, unknown> }).waiting.size).toBe(0);
  });
});
