/** Validation of a run's input: fields, messages, durations and byte budgets. Pure. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { validateRunInput } from "../../src/shared/run-input.js";

describe("validateRunInput", () => {
  const ok = { model: "anthropic/claude-sonnet-4-5", prompt: "hi" };
  it("accepts the documented shapes", () => {
    expect(validateRunInput(ok)).toBeUndefined();
    expect(
      validateRunInput({ ...ok, prompt: { role: "user", content: [{ type: "text", text: "x" }], timestamp: 1 } }),
    ).toBeUndefined();
    expect(
      validateRunInput({
        ...ok,
        model: { id: "m", api: "a", provider: "p" },
        tools: ["read"],
        toolExecution: "sequential",
        maxTurns: 3,
      }),
    ).toBeUndefined();
    expect(validateRunInput({ ...ok, model: "openrouter/anthropic/claude" })).toBeUndefined();
  });
  it.each([
    [null, /run input must be an object/],
    [{ prompt: "hi" }, /"model"/],
    [{ ...ok, model: "/x" }, /"model"/],
    [{ ...ok, model: { id: "m", api: "", provider: "p" } }, /"model.api"/],
    [{ ...ok, prompt: undefined }, /"prompt"/],
    [{ ...ok, prompt: [] }, /"prompt" must not be an empty list/],
    [
      { ...ok, prompt: [{ role: "user", content: "a", timestamp: 1 }, fauxAssistantMessage("b")] },
      /must not end with an assistant message/,
    ],
    [{ ...ok, prompt: { role: "assistant", content: [] } }, /"prompt.role" must be "user"/],
    [{ ...ok, prompt: [{ role: "toolResult", content: [] }] }, /"prompt\[0\].toolCallId"/],
    [
      { ...ok, prompt: { role: "user", content: [{ text: "no type" }] } },
      /"prompt.content\[0\]\.type" must be "text" or "image"/,
    ],
    [{ ...ok, systemPrompt: 3 }, /"systemPrompt"/],
    [{ ...ok, tools: "read" }, /"tools"/],
    [{ ...ok, maxTurns: 1.5 }, /"maxTurns"/],
    [{ ...ok, modelActivity: "fast" }, /"modelActivity"/],
  ])("rejects %j", (input, pattern) => {
    expect(validateRunInput(input)).toMatch(pattern);
  });
});

describe("durations and retry policies, with Temporal's own rules", () => {
  const ok = { model: "anthropic/claude-sonnet-4-5", prompt: "hi" };
  it.each([
    [{ approvalTimeout: "soon" }, /"approvalTimeout" is not a duration: "soon"/],
    [{ approvalTimeout: 0 }, /"approvalTimeout" must be a positive duration/],
    [{ session: { idleTimeout: " 5m" } }, /"session.idleTimeout" is not a duration/],
    [{ modelActivity: { heartbeatTimeout: "-1s" } }, /"modelActivity.heartbeatTimeout" must be a positive duration/],
    [
      { modelActivity: { retry: { maximumAttempts: 1.5 } } },
      /"modelActivity.retry.maximumAttempts" must be a positive integer/,
    ],
    [
      { modelActivity: { retry: { backoffCoefficient: 0.5 } } },
      /"modelActivity.retry.backoffCoefficient" must be a number ≥ 1/,
    ],
    [
      { modelActivity: { retry: { initialInterval: "5s", maximumInterval: "1s" } } },
      /maximumInterval cannot be less than its initialInterval/,
    ],
    [{ modelActivity: { retry: { maxAttempts: 3 } } }, /"modelActivity.retry.maxAttempts" is not a retry option/],
    [{ modelActivity: { timeout: "1m" } }, /"modelActivity.timeout" is not an activity option/],
  ])("rejects %j", (extra, pattern) => {
    expect(validateRunInput({ ...ok, ...extra })).toMatch(pattern);
  });
  it("accepts what Temporal accepts", () => {
    expect(
      validateRunInput({
        ...ok,
        approvalTimeout: "1.5h",
        session: { idleTimeout: 60_000 },
        modelActivity: { heartbeatTimeout: "10s", retry: { maximumAttempts: 2, backoffCoefficient: 1 } },
      }),
    ).toBeUndefined();
  });
});

describe("messages against the @jai/ai schema, and byte budgets", () => {
  const ok = { model: "anthropic/claude-sonnet-4-5" };
  it.each([
    [{ role: "user", content: [] }, /"prompt.content" must not be empty/],
    [{ role: "user", content: [{ type: "text" }] }, /"prompt.content\[0\].text"/],
    [{ role: "user", content: [{ type: "image", mimeType: "image/png" }] }, /"prompt.content\[0\].data"/],
    [
      { role: "user", content: [{ type: "image", data: "AAAA", mimeType: "text/html" }] },
      /"prompt.content\[0\].mimeType"/,
    ],
    [
      { role: "user", content: [{ type: "toolCall", id: "1", name: "x", arguments: {} }] },
      /"prompt.content\[0\].type" must be "text" or "image"/,
    ],
  ])("rejects the prompt %j", (prompt, pattern) => {
    expect(validateRunInput({ ...ok, prompt })).toMatch(pattern);
  });
  it("counts the prompt and the rest of the input in UTF-8 bytes", () => {
    expect(validateRunInput({ ...ok, prompt: "😀".repeat(250_001) })).toMatch(
      /"prompt" is 1,000,006 bytes \(UTF-8 JSON\); the limit is 1,000,000 bytes/,
    );
    expect(validateRunInput({ ...ok, prompt: "😀".repeat(249_000) })).toBeUndefined();
    expect(validateRunInput({ ...ok, prompt: "hi", systemPrompt: "é".repeat(130_000) })).toMatch(
      /"run input \(without prompt\)" is 26\d,\d{3} bytes .*the limit is 256,000 bytes/,
    );
  });
});
