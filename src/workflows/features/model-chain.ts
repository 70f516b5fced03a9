/**
 * Model fallback chains (input `model` as a list, docs/models.md): the setup resolves every model of the chain
 * (`fallbacks`), the model call moves down it when a provider cannot serve (model-call.ts), a budget counts the
 * worst of them. Here: a run recorded before chains refused such a list, and replays so. Patched: MODEL_CHAIN_PATCH.
 */
import { checkModel } from "../model-field.js";
import { hasChange, MODEL_CHAIN_PATCH } from "../patches.js";
import type { RunFeature } from "./feature.js";

export const modelChainFeature: RunFeature = {
  name: "modelChain",
  fields: [],
  problem: (input) => (Array.isArray(input.model) ? checkModel(input.model) : undefined),
  offProblem: (input) =>
    Array.isArray(input.model) ? `"model" must be "provider/modelId" or a Model object` : undefined,
  open: (input) => (Array.isArray(input.model) && hasChange(MODEL_CHAIN_PATCH) ? {} : undefined),
};
