/**
 * The typed-output check in its schema thread (issue #53, rows 1 and 3), in-process: each run's schema is
 * compiled on its own (no `$id` shared between runs), the compiled ones are bounded, and a check that would hold
 * a thread for minutes is stopped at its deadline while this thread goes on running.
 */
import { describe, expect, it } from "@jest/globals";
import { checkOutput } from "../../src/worker/activities/output.js";
import { CHECK_DEADLINE_MS, MAX_CACHED_SCHEMAS, cachedSchemas } from "../../src/worker/activities/schema-thread.js";

describe("the schema thread", () => {
  it("judges each run's schema on its own: a second run's $id is its own, not the first's", async () => {
    const a = { type: "object", $id: "Weather", properties: { city: { type: "string" } }, required: ["city"] };
    const b = { type: "object", $id: "Weather", properties: { tempC: { type: "number" } }, required: ["tempC"] };
    expect(await checkOutput({ schema: a as never, candidate: { args: { city: "Oslo" } } })).toEqual({
      ok: true,
      output: { city: "Oslo" },
    });
    // A shared AJV refused B's schema ("already exists") for the worker's lifetime, failing B's run.
    expect(await checkOutput({ schema: b as never, candidate: { args: { tempC: "3" } } })).toEqual({
      ok: true,
      output: { tempC: 3 },
    });
    // B's rule, not A's: an answer A would accept is refused.
    expect(await checkOutput({ schema: b as never, candidate: { args: { city: "Oslo" } } })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/tempC/),
    });
  });

  it("keeps at most its bound of compiled schemas (each freed with its own AJV instance)", async () => {
    for (let i = 0; i < MAX_CACHED_SCHEMAS + 40; i++)
      await checkOutput({
        schema: { type: "object", properties: { [`k${i}`]: { type: "integer" } } } as never,
        candidate: { args: {} },
      });
    expect(await cachedSchemas()).toBe(MAX_CACHED_SCHEMAS);
  });

  it("matches a backtracking pattern in linear time", async () => {
    const verdict = await checkOutput({
      schema: { type: "string", pattern: "^(a|aa)+$" } as never,
      candidate: { args: { value: "a".repeat(64) + "!" } },
    });
    expect(verdict).toMatchObject({ ok: false, error: expect.stringMatching(/must match pattern/) });
  });

  it("stops a check past its deadline with an error the model sees; this thread runs meanwhile", async () => {
    // uniqueItems over 20,000 objects: ~200 million comparisons (about 30 s of a core here), run on the
    // worker's event loop before.
    const value = Array.from({ length: 20_000 }, (_, i) => ({ a: i }));
    let turns = 0;
    let spinning = true;
    const spin = () => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    const verdict = await checkOutput({
      schema: { type: "array", uniqueItems: true } as never,
      candidate: { args: { value } },
    });
    spinning = false;
    expect(verdict).toEqual({
      ok: false,
      error: `checking the answer against the run's "output" schema was stopped: it took longer than ${CHECK_DEADLINE_MS / 1000} s; give a smaller answer`,
    });
    // Counted, not timed: the event loop went round many times while the check ran (none, when it ran here).
    expect(turns).toBeGreaterThan(100);
    // The next check gets a fresh thread.
    expect(await checkOutput({ schema: { type: "integer" } as never, candidate: { args: { value: "7" } } })).toEqual({
      ok: true,
      output: 7,
    });
  }, 60_000);
});
