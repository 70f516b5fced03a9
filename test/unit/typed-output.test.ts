/** The worker's check of a typed run's final answer (the `checkOutput` local activity), in-process. */
import { describe, expect, it } from "@jest/globals";
import { Type } from "@sinclair/typebox";
import { checkOutput } from "../../src/worker/activities/output.js";
import { outputTool } from "../../src/shared/output-schema.js";

const Weather = JSON.parse(JSON.stringify(Type.Object({ city: Type.String(), tempC: Type.Number() })));

describe("checkOutput", () => {
  it("validates and coerces the final tool's arguments; a refusal names the field", async () => {
    expect(await checkOutput({ schema: Weather, candidate: { args: { city: "Oslo", tempC: "3" } } })).toEqual({
      ok: true,
      output: { city: "Oslo", tempC: 3 },
    });
    const refused = await checkOutput({ schema: Weather, candidate: { args: { city: "Oslo" } } });
    expect(refused).toMatchObject({ ok: false, error: expect.stringMatching(/tempC/) });
    expect(refused).not.toHaveProperty("fatal");
  });

  it("reads a text answer as JSON, whole or one fenced block; prose is refused", async () => {
    const fenced = '```json\n{"city":"Oslo","tempC":3}\n```';
    expect(await checkOutput({ schema: Weather, candidate: { text: fenced } })).toMatchObject({ ok: true });
    expect(await checkOutput({ schema: Weather, candidate: { text: ' {"city":"Oslo","tempC":3} ' } })).toMatchObject({
      ok: true,
    });
    expect(await checkOutput({ schema: Weather, candidate: { text: "Sunny." } })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/without calling final_answer, and it is not JSON/),
    });
  });

  it("wraps a schema that is not an object's as { value } and unwraps the output", async () => {
    const list = JSON.parse(JSON.stringify(Type.Array(Type.Number())));
    expect(outputTool(list).parameters).toEqual({
      type: "object",
      properties: { value: list },
      required: ["value"],
    });
    expect(await checkOutput({ schema: list, candidate: { args: { value: [1, "2"] } } })).toEqual({
      ok: true,
      output: [1, 2],
    });
    expect(await checkOutput({ schema: list, candidate: { text: "[1, 2]" } })).toEqual({ ok: true, output: [1, 2] });
  });

  it("a schema AJV cannot compile is fatal (no answer can pass); the same schema twice, with an $id, compiles once", async () => {
    const verdict = await checkOutput({ schema: { type: "nonsense" } as never, candidate: { args: {} } });
    expect(verdict).toMatchObject({
      ok: false,
      fatal: true,
      error: expect.stringMatching(/"output" schema is unusable/),
    });
    const withId = () => ({ $id: "weather", ...Weather });
    for (let i = 0; i < 2; i++)
      expect(await checkOutput({ schema: withId(), candidate: { args: { city: "Oslo", tempC: 3 } } })).toMatchObject({
        ok: true,
      });
  });
});
