/** Prints a run's events for a terminal: what `npm start` and `npm run watch` show. */
import type { AgentEvent } from "../../shared/contracts.js";

/** A typed run's validated answer (run input `output`) as `watch` prints it at the end: indented JSON. */
export function renderOutput(output: unknown): string {
  return `output: ${JSON.stringify(output, null, 2)}\n`;
}

export interface RenderOptions {
  write?: (text: string) => void;
  /** Called on tool_execution_start: lets the caller look for approvals waiting. */
  onToolStart?: (toolCallId: string) => void;
}

/**
 * Contract: an assistant message's text is printed once, from its deltas when
 * the stream had them, else whole at message_end (events rebuilt from history
 * carry no deltas): a subscriber never sees a blank answer.
 */
export function eventPrinter(options: RenderOptions = {}): (event: AgentEvent) => void {
  const write = options.write ?? ((text: string) => void process.stdout.write(text));
  // Whether the assistant message being streamed printed any text from deltas.
  let printedDeltas = false;
  return (event) => {
    switch (event.type) {
      case "message_update":
        if (event.assistantEvent.type === "text_delta") {
          printedDeltas = true;
          write(event.assistantEvent.delta);
        }
        break;
      case "message_start":
        if (event.message.role === "assistant") printedDeltas = false;
        if (event.message.role === "user") {
          const c = event.message.content;
          write(
            `> ${typeof c === "string" ? c : c.map((b) => (b.type === "text" ? b.text : `[${b.type}]`)).join(" ")}\n`,
          );
        }
        break;
      case "message_end":
        if (event.message.role === "assistant") {
          if (!printedDeltas) {
            const text = event.message.content
              .filter((c) => c.type === "text")
              .map((c) => c.text)
              .join("");
            if (text) write(text);
          }
          printedDeltas = false;
          write("\n");
          if (event.message.stopReason === "error") write(`! model error: ${event.message.errorMessage}\n`);
        }
        break;
      case "tool_execution_start":
        write(`  → ${event.toolName} ${JSON.stringify(event.args)}\n`);
        options.onToolStart?.(event.toolCallId);
        break;
      case "tool_execution_end": {
        const first = event.result.content.find((c) => c.type === "text");
        const preview = first && first.type === "text" ? first.text.split("\n")[0].slice(0, 80) : "";
        write(`  ${event.isError ? "✗" : "✓"} ${event.toolName}: ${preview}\n`);
        break;
      }
      case "turn_start":
        write("\n");
        break;
    }
  };
}
