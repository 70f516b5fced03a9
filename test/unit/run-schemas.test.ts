/**
 * The schemas a run brings itself (issue #53, rows 1-3), from the attacker's side: what a run may declare
 * (local references only, RE2 patterns), and the run's client-result check on the workflow thread, which must
 * end in bounded work whatever the schema and the submitted value (a backtracking pattern held it for minutes).
 */
import { describe, expect, it } from "@jest/globals";
import { validateRunInput } from "../../src/shared/run-input.js";
import { runSchemaProblem } from "../../src/shared/run-schema-checks.js";
import { MAX_CHECK_WORK, schemaProblem } from "../../src/shared/client-tool-checks.js";

const base = { model: "faux/x", prompt: "hi" };
const tool = (result: Record<string, unknown>) => ({
  name: "pick",
  description: "d",
  parameters: { type: "object" },
  result,
});

describe("a run's own schemas at declaration", () => {
  it("refuses references that leave the schema, naming the field; local ones pass", () => {
    expect(validateRunInput({ ...base, output: { $ref: "Weather" } })).toBe(
      `"output.$ref" must be a local reference ("#…"): a run's schema cannot refer to another schema`,
    );
    expect(
      validateRunInput({
        ...base,
        output: { type: "object", properties: { w: { $ref: "https://evil.example/s.json" } } },
      }),
    ).toMatch(/^"output\.properties\.w\.\$ref" must be a local reference/);
    expect(validateRunInput({ ...base, clientTools: [tool({ anyOf: [{ $dynamicRef: "other#x" }] })] })).toMatch(
      /^"clientTools\[0\]\.result\.anyOf\[0\]\.\$dynamicRef" must be a local reference/,
    );
    const local = {
      type: "object",
      $defs: { city: { type: "string" } },
      properties: { city: { $ref: "#/$defs/city" }, $ref: { type: "string" }, pattern: { type: "string" } },
      examples: [{ $ref: "not a schema: data" }],
    };
    expect(validateRunInput({ ...base, output: local })).toBeUndefined();
  });

  it("refuses patterns RE2 cannot run in linear time (lookaround, backreferences), naming the field", () => {
    expect(validateRunInput({ ...base, output: { type: "string", pattern: "^(?=a)a+$" } })).toMatch(
      /^"output\.pattern" cannot be used: .*unsupported Perl syntax.*RE2 syntax/,
    );
    expect(
      validateRunInput({
        ...base,
        clientTools: [{ ...tool({}), parameters: { type: "object", patternProperties: { "(a)\\1": {} } } }],
      }),
    ).toMatch(/^"clientTools\[0\]\.parameters\.patternProperties" key \/\(a\)\\1\/ cannot be used/);
    // Backtracking-prone but regular: RE2 runs it in linear time, so it is accepted.
    expect(validateRunInput({ ...base, output: { type: "string", pattern: "^(a|aa)+$" } })).toBeUndefined();
  });

  it("refuses nesting past its depth limit", () => {
    let deep: Record<string, unknown> = { type: "string" };
    for (let i = 0; i < 40; i++) deep = { items: deep };
    expect(runSchemaProblem(deep, "output")).toMatch(/nests deeper than 32 levels/);
  });
});

describe("a client result's check on the workflow thread", () => {
  it("judges a backtracking pattern in linear time (61 characters held the thread for minutes)", () => {
    const schema = { type: "string", pattern: "^(a|aa)+$" };
    expect(schemaProblem(schema, "a".repeat(60) + "!", "result")).toBe(`"result" must match /^(a|aa)+$/`);
    expect(schemaProblem(schema, "a".repeat(100_000), "result")).toBeUndefined();
  });

  it("refuses a value too costly to check, by counted work, not by time", () => {
    // 20,000 enum entries compared for each of 20,000 items: 4e8 comparisons unbounded.
    const schema = { type: "array", items: { enum: Array.from({ length: 20_000 }, (_, i) => `v${i}`) } };
    const value = Array.from({ length: 20_000 }, () => "v19999");
    expect(schemaProblem(schema, value, "result")).toBe(
      `"result" is too costly to check against the tool's result schema; send a smaller result`,
    );
    // The same schema on a small value is checked as usual.
    expect(schemaProblem(schema, ["v1", "v2"], "result")).toBeUndefined();
    expect(schemaProblem(schema, ["nope"], "result")).toMatch(/^"result\[0\]" must be one of "v0", .*20000 values/);
    // A long string under a big pattern program: matching would cost program size × length.
    const big = { type: "string", pattern: "(\\w{100}\\s?){9}$" };
    expect(schemaProblem(big, "a".repeat(Math.ceil(MAX_CHECK_WORK / 900)), "result")).toMatch(/too costly/);
  });

  it("reads only a value's own keys (no prototype names)", () => {
    const schema = { type: "object", required: ["toString"], properties: { constructor: { type: "string" } } };
    expect(schemaProblem(schema, {}, "result")).toBe(`"result.toString" is required`);
    expect(schemaProblem(schema, { toString: 1, constructor: 2 }, "result")).toBe(
      `"result.constructor" must be string, got integer`,
    );
  });
});
