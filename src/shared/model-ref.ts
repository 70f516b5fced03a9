/** A run input's `model`, one or a fallback chain. Pure: workflow code, the client and the CLIs share it. */
import type { ModelRef } from "./contracts.js";

/** The chain of models a run input names, the first taking every call it can. */
export const modelChain = (model: ModelRef | ModelRef[]): ModelRef[] => (Array.isArray(model) ? model : [model]);

/** `"provider/modelId"` of one model reference. */
export const modelRefName = (model: ModelRef | undefined): string =>
  model === undefined ? "?" : typeof model === "string" ? model : `${model.provider}/${model.id}`;

/** The first model's name, `"provider/modelId"` (what a run is listed under). */
export const primaryModelName = (model: ModelRef | ModelRef[]): string => modelRefName(modelChain(model)[0]);
