/**
 * Model fallback chains (input `model` as a list, docs/models.md): the setup resolves every model of the chain
 * (`fallbacks`), the model call moves down it when a provider cannot serve (model-call.ts), a budget counts the
 * worst of them. Here: a run recorded before chains refused such a list, and replays so. Patched: MODEL_CHAIN_PATCH.
 */
import { featureInput } from "../../shared/feature-inputs.js";
import { hasChange, MODEL_CHAIN_PATCH } from "../patches.js";
import type { RunFeature } from "./feature.js";

export const modelChainFeature: RunFeature = {
  ...featureInput("modelChain"),
  open: (input) => (Array.isArray(input.model) && hasChange(MODEL_CHAIN_PATCH) ? {} : undefined),
};
