/**
 * Typed results (input `output`, docs/typed-results.md): the model is offered a final tool whose arguments are
 * the answer; each candidate (those arguments, or an answer's text) is checked by the `checkOutput` local
 * activity (AJV in the worker), so the verdict is recorded once, as a marker, and replays as it was. An invalid
 * answer goes back to the model as an error it may correct, `outputRetries` times. Patched: TYPED_OUTPUT_PATCH.
 */
import { ActivityFailure, CancellationScope, isCancellation } from "@temporalio/workflow";
import type { AssistantMessage, ToolCall, ToolResultMessage } from "@jai/ai";
import type { TSchema } from "@sinclair/typebox";
import { checkOutput } from "../activity-proxies.js";
import { featureInput } from "../../shared/feature-inputs.js";
import {
  ANSWER_ACCEPTED,
  DEFAULT_OUTPUT_RETRIES,
  NOT_ALONE,
  OUTPUT_TOOL,
  outputCorrection,
  outputTool,
} from "../../shared/output-schema.js";
import { hasChange, TYPED_OUTPUT_PATCH } from "../patches.js";
import { endCall, enter } from "../prompt-loop.js";
import { errorOutput } from "../../shared/tool-output.js";
import type { RunState } from "../run-state.js";
import type { CheckOutputInput, CheckOutputVerdict, ExecuteToolOutput } from "../../shared/wire.js";
import type { RunFeature, TurnFacts, TurnHooks, TurnVerdict } from "./feature.js";

export const typedOutputFeature: RunFeature = {
  ...featureInput("typedOutput"),
  open(input) {
    // Asked only when the input has its fields: runs recorded before ignored them or refused them as unknown.
    if (input.output === undefined && input.outputRetries === undefined) return undefined;
    if (!hasChange(TYPED_OUTPUT_PATCH)) return undefined;
    const schema = input.output;
    if (!schema) return {};
    const retries = input.outputRetries ?? DEFAULT_OUTPUT_RETRIES;
    return {
      setup: (setup) =>
        setup.tools.some((t) => t.name === OUTPUT_TOOL)
          ? `"output" offers the model a tool named ${OUTPUT_TOOL}, and the run has a tool of that name`
          : setup,
      modelTools: [outputTool(schema)],
      turns: (run, resume) => outputTurns(run.state, schema, retries, resume?.outputFailures ?? 0),
      result: (state) => (state.output !== undefined ? { output: state.output } : {}),
      snapshot: (state) => (state.output !== undefined ? { output: state.output } : {}),
    };
  },
};

/** The typed output in one prompt's loop: final-tool calls are the feature's to judge; other calls run as tools. */
function outputTurns(state: RunState, schema: TSchema, retries: number, failed: number): TurnHooks {
  let failures = failed;
  const check = (candidate: CheckOutputInput["candidate"]) => checkCandidate(schema, candidate);
  return {
    claim: (calls) => calls.filter((c) => c.name === OUTPUT_TOOL),
    async afterTools(turn) {
      if (turn.claimed.length === 0 && turn.calls.length > 0) return undefined;
      const { verdict, results } = await judgeAnswer(state, check, turn);
      // Every call that ran asked to end the run: it ends so, whatever the verdict.
      if (turn.terminate) return { results };
      if (verdict.ok) return { results, end: { stopReason: "stop", output: verdict.output } };
      failures++;
      if (verdict.fatal || failures > retries) {
        const why = verdict.fatal
          ? verdict.error
          : `no valid final answer after ${failures} attempt${failures > 1 ? "s" : ""}; the last: ${verdict.error}`;
        return { results, end: { stopReason: "error", errorMessage: `Typed output: ${why}` } };
      }
      // The model has the error (a tool result, or a user message): another turn.
      return { results, again: true } satisfies TurnVerdict;
    },
    carry: () => (failures > 0 ? { outputFailures: failures } : {}),
  };
}

/** One candidate checked in the worker; a check that cannot run ends the prompt ("fatal"). */
function checkCandidate(schema: TSchema, candidate: CheckOutputInput["candidate"]): Promise<CheckOutputVerdict> {
  return checkOutput
    .executeWithOptions({ summary: `check ${"text" in candidate ? "text answer" : "final_answer"}` }, [
      { schema, candidate },
    ])
    .catch((err: unknown): CheckOutputVerdict => {
      if (isCancellation(err) || CancellationScope.current().consideredCancelled) throw err;
      if (!(err instanceof ActivityFailure)) throw err;
      return { ok: false, error: `the output check failed: ${err.cause?.message ?? err.message}`, fatal: true };
    });
}

/** The text of an assistant message (its text blocks, joined). */
const textOf = (message: AssistantMessage) =>
  message.content.flatMap((c) => (c.type === "text" ? [c.text] : [])).join("");

/**
 * Judges this turn's final answer, its final-tool calls or, when it called no tool, its text. Every final-tool
 * call gets its result (the error, or "Answer accepted."), with its tool_execution events; a text answer that
 * fails gets a user message naming the error. Both enter the transcript before turn_end.
 */
async function judgeAnswer(
  state: RunState,
  check: (candidate: CheckOutputInput["candidate"]) => Promise<CheckOutputVerdict>,
  turn: TurnFacts,
): Promise<{ verdict: CheckOutputVerdict; results: ToolResultMessage[] }> {
  const { emit, message, claimed: finals } = turn;
  if (finals.length === 0) {
    const verdict = await check({ text: textOf(message) });
    if (!verdict.ok && !verdict.fatal)
      enter(state, [{ role: "user", content: outputCorrection(verdict.error), timestamp: Date.now() }], emit);
    return { verdict, results: [] };
  }
  for (const call of finals)
    emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
  const verdict: CheckOutputVerdict =
    finals.length > 1 || turn.unclaimed.length > 0
      ? { ok: false, error: NOT_ALONE }
      : await check({ args: finals[0].arguments });
  const results = finals.map((call: ToolCall) => {
    const out: ExecuteToolOutput = verdict.ok
      ? { result: { content: [{ type: "text", text: ANSWER_ACCEPTED }], details: {} }, isError: false }
      : errorOutput(verdict.error);
    return endCall(state, call, out, emit);
  });
  return { verdict, results };
}
