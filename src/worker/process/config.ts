/**
 * What a worker process serves comes from a module the user owns
 * (`jai.config.js`/`.mjs`/`.ts`, or the file named by --config / JAI_CONFIG):
 * its default export (an object, or a function returning one) is an AgentServiceConfig.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { DataConverter } from "@temporalio/common";
import { checkAgents, type AgentDefinition } from "../../shared/agents.js";
import { checkTenants, type TenantsConfig } from "../../shared/tenants.js";
import type { AgentTool } from "../../shared/contracts.js";
import type { AgentWorkerServeOptions } from "../serving.js";
import { checkProviderLimits } from "../activities/provider-limits.js";

/** What the worker process serves: as `createAgentWorker` takes it, with the process's own defaults. */
export interface AgentServiceConfig extends AgentWorkerServeOptions {
  /** Tools the runs may call; default: the workspace-confined `read_file` and `list_dir` over JAI_WORKSPACE (or the working folder). */
  tools?: AgentTool<any>[];
  /** Serve the offline demo model `demo/offline-scripted` too; default true (it needs no key and calls nothing). */
  demoModel?: boolean;
  /**
   * Data converter for the worker and its internal client, e.g. `{ payloadCodecs: [myCodec] }`.
   * Default: the built-in AES-256-GCM codec when JAI_CODEC_KEYS / JAI_CODEC_KEY_FILE is set, else none.
   */
  dataConverter?: DataConverter;
  /** Byte budget of the model-context cache; default 256 MB (flag --context-cache-mb / JAI_CONTEXT_CACHE_MB win). */
  contextCacheBytes?: number;
  /** Named agents the run API (`POST /runs { agent, prompt }`) and the console's "New run" start (src/shared/agents.ts). */
  agents?: AgentDefinition[];
  /** Per-tenant limits (`maxConcurrentRuns`, default `budget`, `fairnessWeight`) of starts by the run API and `jai-agent start --agent` (docs/tenants.md). */
  tenants?: TenantsConfig;
}

/** Identity helper that gives a config file its types: `export default defineConfig({ tools: [...] })`. */
export function defineConfig(config: AgentServiceConfig | (() => AgentServiceConfig | Promise<AgentServiceConfig>)) {
  return config;
}

const CANDIDATES = ["jai.config.js", "jai.config.mjs", "jai.config.ts"];

/** The config file to load: the one named, else the first candidate in `cwd`, else none (built-in defaults). */
export function findConfigFile(named: string | undefined, cwd: string): string | undefined {
  if (named) {
    const file = path.resolve(cwd, named);
    if (!existsSync(file)) throw new Error(`Config module not found: ${file} (from --config / JAI_CONFIG)`);
    return file;
  }
  return CANDIDATES.map((c) => path.join(cwd, c)).find((f) => existsSync(f));
}

/** tsx's loader, once registered for this process (a .ts config under plain node). */
let tsxRegistered: unknown;

async function importModule(file: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ERR_UNKNOWN_FILE_EXTENSION") throw err;
    // A .ts config under plain node (the built worker): load it through tsx when the project has it. tsx's loader
    // is registered for the process, not in a namespace (tsImport): a namespaced import would load its own copy of
    // every package the config imports, and a provider it registers (registerApiProvider) would land in that copy
    // of @jai/ai's registry, not the one the worker streams from. Registered once; the query is a fresh URL,
    // since Node keeps the failed import.
    let register: () => unknown;
    try {
      ({ register } = (await import("tsx/esm/api")) as { register: () => unknown });
    } catch {
      throw new Error(`Cannot load ${file}: compile it to .js, or install tsx so a .ts config can be loaded`);
    }
    tsxRegistered ??= register();
    return (await import(`${pathToFileURL(file).href}?tsx`)) as Record<string, unknown>;
  }
}

/** Loads and checks a config module; a wrong field is named. */
export async function loadServiceConfig(file: string): Promise<AgentServiceConfig> {
  const mod = await importModule(file);
  let value = mod.default ?? mod.config;
  if (typeof value === "function") value = await (value as () => unknown)();
  if (value === undefined) value = mod;
  if (typeof value !== "object" || value === null)
    throw new Error(`${file}: the default export must be an object (or a function returning one)`);
  const config = value as AgentServiceConfig;
  if (config.tools !== undefined && !Array.isArray(config.tools))
    throw new Error(`${file}: "tools" must be an array of AgentTool`);
  for (const [i, tool] of (config.tools ?? []).entries()) {
    if (typeof tool?.name !== "string" || typeof tool.execute !== "function")
      throw new Error(`${file}: tools[${i}] needs a "name" and an "execute" function`);
  }
  if (config.models !== undefined && !Array.isArray(config.models))
    throw new Error(`${file}: "models" must be an array of models`);
  const allowed = config.allowedModelBaseUrls;
  if (allowed !== undefined && (!Array.isArray(allowed) || allowed.some((u) => typeof u !== "string")))
    throw new Error(`${file}: "allowedModelBaseUrls" must be an array of base URLs`);
  if (config.mcpServers !== undefined && !Array.isArray(config.mcpServers))
    throw new Error(`${file}: "mcpServers" must be an array of MCP server configs`);
  checkAgents(config.agents, `${file}: agents`);
  checkTenants(config.tenants, `${file}: tenants`);
  if (config.providerLimits !== undefined) checkProviderLimits(config.providerLimits, `${file}: providerLimits`);
  return config;
}
