/** Rebuilding a run's transcript from its recorded steps (history-story.ts), without a server. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { runMessages, type RunStory } from "../../src/client/history-story.js";
import type { AgentMessage } from "../../src/shared/contracts.js";
import type { StreamAssistantInput } from "../../src/shared/wire.js";
import { emptyUsage } from "../../src/shared/usage.js";

const call = (base: number, append: StreamAssistantInput["context"]["append"]) =>
  ({ kind: "call", context: { epoch: 0, base, append } }) as const;

function story(steps: RunStory["steps"], updates: [string, unknown][] = []): RunStory {
  return {
    input: { model: "faux/faux-1", prompt: "go" },
    items: [],
    steps,
    updates: new Map(updates),
    usage: emptyUsage(),
    status: "completed",
    events: 0,
  };
}

describe("runMessages", () => {
  const first = fauxAssistantMessage("one");
  const second = fauxAssistantMessage("two");
  const prompt: AgentMessage = { role: "user", content: "go", timestamp: 1 };

  it("resolves a user message passed by reference from the update that sent it, with the call's timestamp", () => {
    const rebuilt = runMessages(
      story(
        [
          call(0, [prompt]),
          { kind: "reply", message: first },
          call(2, [{ ref: "userInput", source: "update:u-1", timestamp: 7 }]),
          { kind: "reply", message: second },
        ],
        [["u-1", "steered"]],
      ),
    );
    expect(rebuilt.exact).toBe(true);
    expect(rebuilt.messages[2]).toEqual({ role: "user", content: "steered", timestamp: 7 });
  });

  it("a user message that carries `ref` and `source` keys of its own is a message, not a reference", () => {
    const tricky = {
      role: "user",
      content: "tricky",
      timestamp: 5,
      ref: "userInput",
      source: "update:none",
    } as AgentMessage;
    const rebuilt = runMessages(
      story([
        call(0, [prompt]),
        { kind: "reply", message: first },
        call(2, [tricky]),
        { kind: "reply", message: second },
      ]),
    );
    expect(rebuilt.exact).toBe(true);
    expect(rebuilt.messages[2]).toEqual(tricky);
  });
});
