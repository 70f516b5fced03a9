/** The tool scheduler of one batch: parallel groups, sequential barriers, the order results are reported in. Pure. */
import { describe, expect, it } from "@jest/globals";
import type { ToolExecutionMode } from "../../src/shared/contracts.js";
import { runToolBatch } from "../../src/workflows/tool-batch.js";
import { deferred } from "../support/helpers.js";

describe("runToolBatch", () => {
  /** Each call finishes when the test says so; the log shows what overlapped and what was reported when. */
  function harness(modes: ToolExecutionMode[]) {
    const log: string[] = [];
    const gates = modes.map(() => deferred());
    const reports: string[] = [];
    const done = runToolBatch(modes, {
      run: async (i) => {
        log.push(`start ${i}`);
        await gates[i].promise;
        log.push(`end ${i}`);
        return i * 10;
      },
      finished: (i, r) => void reports.push(`finished ${i}=${r}`),
      groupFinished: (indices, results) => void reports.push(`group ${indices.join(",")}=${results.join(",")}`),
    });
    const flush = () => new Promise((r) => setImmediate(r));
    return { log, gates, reports, done, flush };
  }

  it("starts parallel calls together, reports each as it finishes and the group, in source order, at the end", async () => {
    const h = harness(["parallel", "parallel", "parallel"]);
    await h.flush();
    expect(h.log).toEqual(["start 0", "start 1", "start 2"]);
    h.gates[2].resolve();
    await h.flush();
    h.gates[1].resolve();
    await h.flush();
    // Call 0 still running: 2 and 1 are reported finished, nothing enters the transcript yet.
    expect(h.reports).toEqual(["finished 2=20", "finished 1=10"]);
    h.gates[0].resolve();
    expect(await h.done).toEqual([0, 10, 20]);
    expect(h.reports).toEqual(["finished 2=20", "finished 1=10", "finished 0=0", "group 0,1,2=0,10,20"]);
  });

  it("runs a sequential call alone, as a group of its own: after the running ones, before the next ones", async () => {
    const h = harness(["parallel", "sequential", "parallel", "parallel"]);
    await h.flush();
    expect(h.log).toEqual(["start 0"]);
    h.gates[0].resolve();
    await h.flush();
    expect(h.log).toEqual(["start 0", "end 0", "start 1"]);
    expect(h.reports).toEqual(["finished 0=0", "group 0=0"]);
    h.gates[1].resolve();
    await h.flush();
    expect(h.log.slice(3)).toEqual(["end 1", "start 2", "start 3"]);
    expect(h.reports.slice(2)).toEqual(["finished 1=10", "group 1=10"]);
    h.gates[3].resolve();
    await h.flush();
    h.gates[2].resolve();
    expect(await h.done).toEqual([0, 10, 20, 30]);
    expect(h.reports.slice(4)).toEqual(["finished 3=30", "finished 2=20", "group 2,3=20,30"]);
  });

  it("reports an all-sequential batch call by call, as pi-agent-core's sequential mode", async () => {
    const h = harness(["sequential", "sequential"]);
    h.gates.forEach((g) => g.resolve());
    await h.done;
    expect(h.reports).toEqual(["finished 0=0", "group 0=0", "finished 1=10", "group 1=10"]);
  });

  it("handles an empty batch", async () => {
    expect(
      await runToolBatch([], { run: async () => 1, groupFinished: () => expect("no group").toBe("reported") }),
    ).toEqual([]);
  });
});
