/** The error result the loop makes for a call (shared by the workflow and the tool activity; pure). */
import type { ExecuteToolOutput } from "../types.js";

export function errorOutput(text: string): ExecuteToolOutput {
  return { result: { content: [{ type: "text", text }] }, isError: true };
}
