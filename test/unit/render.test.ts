/** The terminal printer (watch, `npm start`): an answer is printed whether or not its deltas were seen. */
import type { AssistantMessage } from "@jai/ai";
import { eventPrinter } from "../../src/client/events/render.js";
import { transcriptEvents } from "../../src/client/events/from-history.js";
import type { AgentEvent, AgentMessage } from "../../src/shared/contracts.js";

function assistant(text: string): AssistantMessage {
  return {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "m",
    usage: {
      input: 1,
      output: 1,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 2,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    },
    stopReason: "stop",
    timestamp: 0,
  };
}

function printed(events: AgentEvent[]): string {
  let out = "";
  const print = eventPrinter({ write: (text) => void (out += text) });
  for (const event of events) print(event);
  return out;
}

test("events rebuilt from history (no deltas) print every assistant text, the final answer included", () => {
  const messages: AgentMessage[] = [{ role: "user", content: "hi", timestamp: 0 }, assistant("The answer is 42.")];
  const out = printed(transcriptEvents(messages, true));
  expect(out).toContain("> hi");
  expect(out).toContain("The answer is 42.");
});

test("a streamed message prints its text once, from its deltas", () => {
  const message = assistant("Hello world");
  const events: AgentEvent[] = [
    { type: "message_start", message: { ...message, content: [] } },
    {
      type: "message_update",
      message,
      assistantEvent: { type: "text_delta", contentIndex: 0, delta: "Hello ", partial: message },
    },
    {
      type: "message_update",
      message,
      assistantEvent: { type: "text_delta", contentIndex: 0, delta: "world", partial: message },
    },
    { type: "message_end", message },
  ];
  const out = printed(events);
  expect(out.match(/Hello world/g)).toHaveLength(1);
});
