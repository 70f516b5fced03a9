/** The error result the loop makes for a call (shared by the workflow and the tool activity; pure). */
import type { ExecuteToolOutput } from "./wire.js";

/** `details: {}` as pi-agent-core's error results carry, so transcripts match the reference loop's. */
export function errorOutput(text: string): ExecuteToolOutput {
  return { result: { content: [{ type: "text", text }], details: {} }, isError: true };
}
