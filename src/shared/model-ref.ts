/** A run input's `model`, one or a fallback chain. Pure: workflow code, the client and the CLIs share it. */
import type { ModelRef } from "./contracts.js";

/** The chain of models a run input names, the first taking every call it can. */
export const modelChain = (model: ModelRef | ModelRef[]): ModelRef[] => (Array.isArray(model) ? model : [model]);

/** `"provider/modelId"` of one model reference. */
export const modelRefName = (model: ModelRef | undefined): string =>
  model === undefined ? "?" : typeof model === "string" ? model : `${model.provider}/${model.id}`;

/** The first model's name, `"provider/modelId"` (what a run is listed under). */
export const primaryModelName = (model: ModelRef | ModelRef[]): string => modelRefName(modelChain(model)[0]);

/**
 * What a run asks the setup activity for its `model` (one, or a chain whose setup resolves its fallbacks too) and
 * `tools`, and how the activity's summary names the models.
 */
export function setupRequest(model: ModelRef | ModelRef[], tools: string[] | undefined) {
  const [first, ...fallbacks] = modelChain(model);
  const n = fallbacks.length;
  const label = n ? `${modelRefName(first)} (+${n} fallback${n > 1 ? "s" : ""})` : modelRefName(first);
  // A chain's request names its fallbacks; a single model's is as it always was.
  return { args: { model: first, ...(Array.isArray(model) ? { fallbacks } : {}), tools }, label };
}
