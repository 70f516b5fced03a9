/** The one object a run's steps are given: what it was asked, what it resolved once, and what it knows now. */
import type { Tool } from "@jai/ai";
import type { ActiveFeature } from "./features/feature.js";
import type { AgentRunWorkflowInput, RunSetup } from "../shared/wire.js";
import type { RunState } from "./run-state.js";

export interface RunContext {
  /** The workflow's input as recorded (a continued run's: its chain's first input, with what was carried). */
  readonly input: AgentRunWorkflowInput;
  /** Model and tools, resolved once per chain (recorded in history, carried across continue-as-new). */
  readonly setup: RunSetup;
  /** Everything the run knows; each part written by one file (see run-state.ts). */
  readonly state: RunState;
  /** The run features this run uses (features/index.ts), in list order. */
  readonly features: readonly ActiveFeature[];
  /** Tools the features offer the model beside the setup's (a typed output's final tool), last. */
  readonly featureTools: readonly Tool[];
}
