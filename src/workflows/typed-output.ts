/**
 * Typed results in the workflow (run input `output`, docs/typed-results.md): the loop's `OutputEffects`.
 * Each candidate final answer is checked by the `checkOutput` local activity (AJV in the worker), so the
 * verdict is recorded once, as a marker, and replays as it was.
 */
import { ActivityFailure, CancellationScope, isCancellation } from "@temporalio/workflow";
import { checkOutput } from "./activities.js";
import { DEFAULT_OUTPUT_RETRIES } from "./output-schema.js";
import type { OutputEffects } from "./prompt-loop.js";
import type { RunContext } from "./run-context.js";
import type { CheckOutputVerdict } from "./wire.js";

/** The loop's typed-output effects, when the run has a typed output. */
export function outputEffects(run: RunContext): OutputEffects | undefined {
  const schema = run.output;
  if (!schema) return undefined;
  return {
    retries: run.input.outputRetries ?? DEFAULT_OUTPUT_RETRIES,
    check: (candidate) =>
      checkOutput
        .executeWithOptions({ summary: `check ${"text" in candidate ? "text answer" : "final_answer"}` }, [
          { schema, candidate },
        ])
        .catch((err: unknown): CheckOutputVerdict => {
          if (isCancellation(err) || CancellationScope.current().consideredCancelled) throw err;
          if (!(err instanceof ActivityFailure)) throw err;
          return { ok: false, error: `the output check failed: ${err.cause?.message ?? err.message}`, fatal: true };
        }),
  };
}
