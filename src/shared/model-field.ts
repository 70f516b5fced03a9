/** The run input's `model`: one model, or a list of them (a fallback chain, features/model-chain.ts). Pure. */
import { isObject } from "./plain-object.js";

/** Most models of a fallback chain. */
export const MAX_MODEL_CHAIN = 5;

export function checkModel(model: unknown, list = true): string | undefined {
  if (Array.isArray(model) && list) {
    if (model.length === 0 || model.length > MAX_MODEL_CHAIN)
      return `"model" as a fallback chain must list 1 to ${MAX_MODEL_CHAIN} models, got ${model.length}`;
    for (let i = 0; i < model.length; i++) {
      const problem = checkModel(model[i], false);
      if (problem) return problem.replace(/^"model/, `"model[${i}]`);
    }
    return undefined;
  }
  if (typeof model === "string") {
    const slash = model.indexOf("/");
    if (slash <= 0 || slash === model.length - 1)
      return `"model" must be "provider/modelId" or a Model object, got "${model}"`;
    return undefined;
  }
  if (!isObject(model))
    return `"model" must be "provider/modelId" or a Model object${list ? ", or a list of them (a fallback chain)" : ""}`;
  for (const key of ["id", "api", "provider"]) {
    if (typeof model[key] !== "string" || model[key] === "") return `"model.${key}" must be a non-empty string`;
  }
  return undefined;
}
