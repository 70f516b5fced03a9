/**
 * Whether a model a command names ("provider/modelId") is one a worker would serve, checked before anything is
 * created: a model of @jai/ai's catalogue, the offline demo model, or one of the models the workers' config module
 * declares (`--config`, JAI_CONFIG, ./jai.config.{js,mjs,ts}: the module the worker process loads). A mistyped
 * name is refused with the nearest known one, instead of a schedule whose every run fails at setup.
 */
import { getModels, getProviders, type Api, type Model } from "@jai/ai";
import { nearestName } from "../shared/near-name.js";

/** The offline demo model every worker process serves unless told not to (src/demo/offline-model.ts). */
export const DEMO_MODEL = "demo/offline-scripted";

/** Every "provider/id" of @jai/ai's catalogue. */
function catalogue(): string[] {
  return getProviders().flatMap((p) => (getModels(p) as Model<Api>[]).map((m) => `${m.provider}/${m.id}`));
}

/** What is wrong with `ref`, or undefined when a worker serves it; `served`: the config module's models. */
export function modelProblem(ref: string, served: string[] = []): string | undefined {
  const slash = ref.indexOf("/");
  if (slash <= 0 || slash === ref.length - 1) return `--model must be "provider/modelId", got "${ref}"`;
  const known = [...new Set([...catalogue(), DEMO_MODEL, ...served])];
  if (known.includes(ref)) return undefined;
  const provider = ref.slice(0, slash);
  const providers = [...new Set(known.map((k) => k.slice(0, k.indexOf("/"))))];
  const near =
    nearestName(ref, known) ??
    (providers.includes(provider)
      ? undefined
      : (() => {
          const p = nearestName(provider, providers);
          return p ? `${p}/${ref.slice(slash + 1)}` : undefined;
        })());
  const where = providers.includes(provider)
    ? `"${provider}" has no model "${ref.slice(slash + 1)}"`
    : `no provider "${provider}"`;
  return (
    `unknown model "${ref}": ${where} in @jai/ai's catalogue${served.length ? " or the config module" : ""}` +
    (near ? ` (did you mean "${near}"?)` : "") +
    `; a model only your workers' config module declares: name the module with --config`
  );
}
