/**
 * "Context seen == context recorded": what the model was given at each call,
 * checked against the context the workflow recorded. Wrap a faux model's
 * responses with `seen.wrap(...)` (or log `context.messages` from a factory),
 * then compare with the run's transcript.
 */
import type { Context, FauxResponseStep } from "@jai/ai";
import type { AgentMessage } from "../../src/shared/contracts.js";
import { canonicalJson } from "../../src/shared/context-digest.js";

/** The contexts a faux model was called with, in call order (retried calls included). */
export class SeenContexts {
  readonly calls: AgentMessage[][] = [];

  /** The same responses, recording each call's messages first. */
  wrap(steps: FauxResponseStep[]): FauxResponseStep[] {
    return steps.map((step) => (context: Context, options, state, model) => {
      this.record(context);
      return typeof step === "function" ? step(context, options, state, model) : step;
    });
  }

  record(context: Context): void {
    this.calls.push(JSON.parse(JSON.stringify(context.messages)) as AgentMessage[]);
  }
}

/** The model's view of the transcript: details are for logs and UI only. */
export function recordedContext(transcript: AgentMessage[]): AgentMessage[] {
  return transcript.map((m) => {
    if (m.role !== "toolResult" || m.details === undefined) return m;
    const { details: _details, ...rest } = m;
    return rest;
  });
}

/**
 * Every call's context must be exactly the recorded context before the
 * assistant message that answered it (for runs without compaction). Returns
 * the differences, empty when every call saw what history holds.
 */
export function contextMismatches(seen: AgentMessage[][], transcript: AgentMessage[]): string[] {
  const recorded = recordedContext(transcript);
  const problems: string[] = [];
  seen.forEach((messages, call) => {
    const at = messages.length;
    if (recorded[at]?.role !== "assistant")
      problems.push(
        `call ${call + 1}: ${at} messages, but recorded message ${at} is ${recorded[at]?.role ?? "missing"}, not the answer`,
      );
    for (let i = 0; i < at; i++) {
      if (canonicalJson(messages[i]) !== canonicalJson(recorded[i])) {
        problems.push(
          `call ${call + 1}: message ${i} seen ${canonicalJson(messages[i]).slice(0, 300)} but recorded ${canonicalJson(recorded[i]).slice(0, 300)}`,
        );
      }
    }
  });
  if (seen.length === 0) problems.push("the model was never called");
  return problems;
}
