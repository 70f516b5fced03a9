/** The one object a run's steps are given: what it was asked, what it resolved once, and what it knows now. */
import type { TSchema } from "@sinclair/typebox";
import type { AgentRunWorkflowInput, RunSetup } from "./wire.js";
import type { RunState } from "./run-state.js";

export interface RunContext {
  /** The workflow's input as recorded (a continued run's: its chain's first input, with what was carried). */
  readonly input: AgentRunWorkflowInput;
  /** Model and tools, resolved once per chain (recorded in history, carried across continue-as-new). */
  readonly setup: RunSetup;
  /** Everything the run knows; each part written by one file (see run-state.ts). */
  readonly state: RunState;
  /** The typed output's schema, when the run takes that path (`output` in its input, TYPED_OUTPUT_PATCH). */
  readonly output?: TSchema;
}
