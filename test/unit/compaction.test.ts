/**
 * The context estimate the workflow runs before every model call (and a replay
 * runs again for every turn): pure unit tests, no server.
 */
import { afterEach, describe, expect, it, jest } from "@jest/globals";
import type { AgentMessage } from "../../src/shared/contracts.js";
import { estimateTokens, shortenToolResults } from "../../src/workflows/compaction.js";

const page = (i: number): AgentMessage => ({
  role: "toolResult",
  toolCallId: `c${i}`,
  toolName: "fetch_page",
  content: [{ type: "text", text: `page ${i}: ${"p".repeat(8000)}` }],
  isError: false,
  timestamp: i,
});

afterEach(() => {
  jest.restoreAllMocks();
});

describe("estimateTokens", () => {
  it("weighs each message once: a context grown by one turn costs one new message, not the whole context again", () => {
    const context: AgentMessage[] = [{ role: "user", content: "go", timestamp: 0 }];
    for (let i = 1; i <= 100; i++) context.push(page(i));
    const first = estimateTokens(context, "system");
    const stringify = jest.spyOn(JSON, "stringify");
    context.push(page(101));
    const second = estimateTokens(context, "system");
    // The new page's one content block and the (empty) tool list; the 100 earlier pages are not serialized again.
    expect(stringify.mock.calls.length).toBeLessThanOrEqual(2);
    stringify.mockRestore();
    // The same figure as weighing every message afresh (copies are new objects).
    expect(second).toBe(estimateTokens(context.map((m) => ({ ...m })) as AgentMessage[], "system"));
    expect(second).toBeGreaterThan(first + 2000);
  });

  it("counts images by number and text by length", () => {
    const image: AgentMessage = {
      role: "user",
      content: [
        { type: "image", data: "AAAA".repeat(10_000), mimeType: "image/png" },
        { type: "text", text: "look" },
      ],
      timestamp: 1,
    };
    expect(estimateTokens([image])).toBe(
      Math.ceil((JSON.stringify([]).length + JSON.stringify({ type: "text", text: "look" }).length) / 4) + 1200,
    );
  });

  it("sees a shortened tool result as the new, shorter message it is", () => {
    const context: AgentMessage[] = [{ role: "user", content: "go", timestamp: 0 }, page(1), page(2)];
    context.push({
      role: "assistant",
      content: [{ type: "text", text: "done" }],
      timestamp: 3,
    } as unknown as AgentMessage);
    const estimate = (messages: AgentMessage[]) => estimateTokens(messages);
    const before = estimate(context);
    const { context: shorter, shortened } = shortenToolResults(context, 1000, estimate);
    expect(shortened).toBe(2);
    expect(estimate(shorter)).toBeLessThan(before / 10);
    expect(estimate(context)).toBe(before);
  });
});
