/**
 * Every run feature, in the order a run opens them (their patches are asked in this order, first thing in the
 * run: keep it, or recorded runs stop replaying). A new feature is one file beside these and one entry here.
 */
import { approvalPolicyFeature } from "./approval-policy.js";
import { budgetFeature } from "./budget.js";
import { clientToolsFeature } from "./client-tools.js";
import type { RunFeature } from "./feature.js";
import { modelChainFeature } from "./model-chain.js";
import { runSchemasFeature } from "./run-schemas.js";
import { typedOutputFeature } from "./typed-output.js";

export const RUN_FEATURES: readonly RunFeature[] = [
  // First: its tools join the setup before another feature looks at the setup's tools (it asks no patch in open).
  clientToolsFeature,
  typedOutputFeature,
  budgetFeature,
  modelChainFeature,
  runSchemasFeature,
  approvalPolicyFeature,
];

export type { ActiveFeature, LoopOutcome, RunFeature, TurnHooks } from "./feature.js";
