/**
 * Which models a worker serves with its keys (DESIGN §7: run input names a
 * model, never where the worker sends its credentials). A run may give its
 * model as a full object, and that object travels through workflow history,
 * so the setup activity and the model activity both hold it against the
 * worker's own list: its `models` option and @jai/ai's catalogue, at their
 * base URL, with their headers and api. The operator may allow more base URLs
 * (self-hosted endpoints: `allowedModelBaseUrls`, JAI_ALLOWED_MODEL_BASE_URLS).
 *
 * APIs registered in-process by the worker's own code (`registerApiProvider`,
 * `registerFauxProvider`) are the operator's code, not @jai/ai's network
 * providers: a run may name a model object of such an API, but the worker's
 * key goes with it only when that model is one of the worker's own.
 */
import { getApiProviders, getModels, getProviders, type Api, type KnownApi, type Model } from "@jai/ai";
import { httpUrl } from "../../shared/urls.js";

/** @jai/ai's own network APIs (a new one in @jai/ai fails the typecheck here until it is listed). */
const KNOWN_APIS: Record<KnownApi, true> = {
  "openai-completions": true,
  "mistral-conversations": true,
  "openai-responses": true,
  "azure-openai-responses": true,
  "openai-codex-responses": true,
  "anthropic-messages": true,
  "bedrock-converse-stream": true,
  "google-generative-ai": true,
  "google-gemini-cli": true,
  "google-vertex": true,
};

/**
 * @jai/ai registers its built-in providers when it loads, before this module
 * runs: whatever is registered now is built in too (a custom registration
 * made later under a built-in name stays a network API here, the strict side).
 */
const BUILT_IN_APIS: ReadonlySet<string> = new Set([
  ...Object.keys(KNOWN_APIS),
  ...getApiProviders().map((p) => p.api),
]);

/** Whether `api` is one of @jai/ai's built-in (network) APIs, which run input may not point anywhere. */
export function isBuiltInApi(api: string): boolean {
  return BUILT_IN_APIS.has(api);
}

/** A base URL in the one form compared: `scheme://host[:port]/path` without trailing slash; undefined when not plain http(s). */
export function normalizeBaseUrl(value: unknown): string | undefined {
  if (typeof value !== "string" || value.trim() === "") return undefined;
  const url = httpUrl(value.trim());
  if (!url) return undefined;
  // Credentials, a query or a fragment in a base URL change what the SDK sends where: never the same URL.
  if (url.username || url.password || url.search || url.hash) return undefined;
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
}

/** Parses JAI_ALLOWED_MODEL_BASE_URLS / --allowed-model-base-urls: URLs separated by commas or white space. */
export function parseBaseUrlList(value: string | undefined): string[] {
  return (value ?? "").split(/[\s,]+/).filter((s) => s !== "");
}

const sameHeaders = (a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean => {
  const x = Object.entries(a ?? {}).sort(([k], [l]) => k.localeCompare(l));
  const y = Object.entries(b ?? {}).sort(([k], [l]) => k.localeCompare(l));
  return x.length === y.length && x.every(([k, v], i) => y[i][0] === k && y[i][1] === v);
};

/** What the policy says of a model object. */
export type ModelVerdict =
  /** One of the worker's own models, or at a base URL the operator allows: served with the provider's key. */
  | { served: true; keyed: true }
  /** A model object of an API the worker's own code registered, not one of its models: served without a key. */
  | { served: true; keyed: false }
  /** Refused: `field` is the run-input field at fault, `reason` says why. */
  | { served: false; field: string; reason: string };

/** The worker's models (its own, then @jai/ai's catalogue) and the extra base URLs its operator allows. */
export class ModelPolicy {
  private readonly own: Model<Api>[];
  private readonly allowed: ReadonlySet<string>;
  private catalogue?: Map<string, Model<Api>[]>;

  /** Throws a TypeError naming an allowed base URL that is not a plain http(s) URL. */
  constructor(models: Model<Api>[] = [], allowedBaseUrls: string[] = []) {
    this.own = models;
    const allowed = new Set<string>();
    for (const url of allowedBaseUrls) {
      const normal = normalizeBaseUrl(url);
      if (!normal)
        throw new TypeError(
          `allowedModelBaseUrls: "${url}" is not an http(s) base URL (without credentials, query or fragment)`,
        );
      allowed.add(normal);
    }
    this.allowed = allowed;
  }

  /** The models the worker serves as `provider/id` (its own first, then the catalogue's). */
  private candidates(provider: string, id: string): Model<Api>[] {
    if (!this.catalogue) {
      this.catalogue = new Map();
      for (const p of getProviders())
        for (const m of getModels(p) as Model<Api>[]) {
          const key = `${m.provider}/${m.id}`;
          this.catalogue.set(key, [...(this.catalogue.get(key) ?? []), m]);
        }
    }
    const named = (m: Model<Api>) => m.provider === provider && m.id === id;
    return [...this.own.filter(named), ...(this.catalogue.get(`${provider}/${id}`) ?? []).filter(named)];
  }

  /** Whether `provider/id` names one of the worker's models (a bounded set: metrics labels). */
  knows(provider: string, id: string): boolean {
    return this.candidates(provider, id).length > 0;
  }

  /** Whether `baseUrl` is one the operator allows besides the served models'. */
  allows(baseUrl: unknown): boolean {
    const normal = normalizeBaseUrl(baseUrl);
    return normal !== undefined && this.allowed.has(normal);
  }

  /** Holds a model object (from run input, or from history in the model activity) against the worker's list. */
  check(model: Model<Api>): ModelVerdict {
    const candidates = this.candidates(model.provider, model.id);
    const sameApi = candidates.filter((m) => m.api === model.api);
    const atUrl = sameApi.filter((m) => m.baseUrl === model.baseUrl);
    if (atUrl.some((m) => sameHeaders(m.headers, model.headers))) return { served: true, keyed: true };
    if (this.allows(model.baseUrl)) return { served: true, keyed: true };
    // The worker's own code decides where such a model's requests go; the key is not the run's to attach.
    if (!isBuiltInApi(model.api)) return { served: true, keyed: false };
    const name = `"${model.provider}/${model.id}"`;
    const allow =
      "or have the worker's operator allow its base URL (allowedModelBaseUrls, JAI_ALLOWED_MODEL_BASE_URLS)";
    if (candidates.length === 0)
      return {
        served: false,
        field: "model",
        reason: `${name} (api "${model.api}") is not a model this worker serves; name one of its models or @jai/ai's catalogue as "provider/modelId", ${allow}`,
      };
    if (sameApi.length === 0)
      return {
        served: false,
        field: "model.api",
        reason: `${name} is served with api ${[...new Set(candidates.map((m) => `"${m.api}"`))].join(", ")}, not "${model.api}"`,
      };
    if (atUrl.length === 0)
      return {
        served: false,
        field: "model.baseUrl",
        reason: `${name} is served at ${[...new Set(sameApi.map((m) => m.baseUrl))].join(", ")}, not ${JSON.stringify(model.baseUrl)}: run input does not choose where the worker sends its key; name the model as "${model.provider}/${model.id}", ${allow}`,
      };
    return {
      served: false,
      field: "model.headers",
      reason: `${name} is served with other headers than the run gives; name the model as "${model.provider}/${model.id}" instead`,
    };
  }
}
