/** How a worker reaches an MCP server, and which of its tools runs may use. */
import type { AgentActivityOptions } from "../../shared/contracts.js";
import { parseUrl } from "../../shared/urls.js";

/** A server the worker starts as a child process and talks to over stdin/stdout. */
export interface McpStdioTransport {
  type: "stdio";
  /** Program to run, e.g. "npx" or an absolute path. */
  command: string;
  /** Its arguments. */
  args?: string[];
  /** Extra environment (merged over the SDK's safe default subset of the worker's environment). */
  env?: Record<string, string>;
  /** Working folder of the process. */
  cwd?: string;
}

/** A server reached over MCP's Streamable HTTP transport. */
export interface McpHttpTransport {
  type: "http";
  /** Endpoint URL (http or https). */
  url: string;
  /** Headers sent with every request, verbatim (nothing secret: configs get logged). */
  headers?: Record<string, string>;
  /** Headers whose values the worker reads from its environment, header name → variable name (e.g. `{ Authorization: "MCP_TOKEN" }`). */
  headersFromEnv?: Record<string, string>;
}

/** One MCP server as a source of tools. */
export interface McpServerConfig {
  /** Prefix of its tools' names as the model sees them (`<name>__<tool>`): letters, digits, "-", at most 24 characters. */
  name: string;
  /** How to reach it. */
  transport: McpStdioTransport | McpHttpTransport;
  /** Only these tools (the server's own names); default all. */
  allow?: string[];
  /** Never these tools (the server's own names). */
  deny?: string[];
  /**
   * Ask a person before a call, as `requiresApproval` of a native tool: for every
   * tool, for the tools named, or when the predicate (server's tool name, validated args) says so.
   */
  requiresApproval?:
    | boolean
    | string[]
    | ((toolName: string, args: Record<string, unknown>) => boolean | Promise<boolean>);
  /** Temporal timeouts and retry policy of every call's activity. */
  activity?: AgentActivityOptions;
  /** Longest a single MCP request may take before the SDK gives up on it; default 10 minutes (progress notifications reset it). */
  requestTimeoutMs?: number;
  /** Longest connecting (spawning + initialize) may take; default 30 s. */
  connectTimeoutMs?: number;
  /**
   * Repeat a call on a fresh connection when the server died during it: default
   * only for tools the server marks `readOnlyHint` or `idempotentHint`. Other calls
   * end with an error result saying the call may have had effects.
   */
  repeatAfterCrash?: boolean;
  /**
   * Longest description (UTF-8 bytes) a tool of this server keeps; a longer one is cut
   * with a marker saying so. Default 4 KiB (`MCP_DEFAULT_LIMITS`), at most 64 KiB.
   */
  maxDescriptionBytes?: number;
  /** Largest input schema (UTF-8 bytes of its JSON); a tool with a larger one is not offered (warning). Default 32 KiB, at most 256 KiB. */
  maxSchemaBytes?: number;
  /**
   * Byte budget of all of this server's tools as a run's setup records them (name,
   * description, schema): tools past it, in the server's order, are not offered
   * (warning). Default 128 KiB; all servers of a run together never exceed 512 KiB.
   */
  maxToolsBytes?: number;
  /**
   * After a failed connect or listing, the server is not asked again for this long:
   * `initialMs` (default 1 s), doubling after each further failure up to `maxMs`
   * (default 60 s). Meanwhile runs that do not name its tools go without them; runs
   * that do fail at setup (`McpServerUnavailable`).
   */
  retryBackoff?: { initialMs?: number; maxMs?: number };
}

/** Caps on what a server's tool list may put into a run's history (see `McpServerConfig`). */
export const MCP_DEFAULT_LIMITS = {
  maxDescriptionBytes: 4 * 1024,
  maxSchemaBytes: 32 * 1024,
  maxToolsBytes: 128 * 1024,
} as const;

/** No configuration raises a cap past these; all servers of one run share `toolsBytes`. */
export const MCP_CEILINGS = {
  maxDescriptionBytes: 64 * 1024,
  maxSchemaBytes: 256 * 1024,
  maxToolsBytes: 512 * 1024,
  toolsBytes: 512 * 1024,
} as const;

export const MCP_DEFAULT_BACKOFF = { initialMs: 1_000, maxMs: 60_000 } as const;

const NAME = /^[A-Za-z0-9-]{1,24}$/;

/** What is wrong with a server's configuration, naming the field; undefined when fine. */
export function checkMcpServerConfig(config: McpServerConfig, at: string): string | undefined {
  if (typeof config?.name !== "string" || !NAME.test(config.name))
    return `${at}.name must be 1-24 letters, digits or "-" (it prefixes the tool names), got ${JSON.stringify(config?.name)}`;
  const t = config.transport;
  if (t?.type === "stdio") {
    if (typeof t.command !== "string" || t.command === "") return `${at}.transport.command must be a non-empty string`;
  } else if (t?.type === "http") {
    const url = parseUrl(t.url);
    if (!url) return `${at}.transport.url is not a URL: ${JSON.stringify(t.url)}`;
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return `${at}.transport.url must be http or https, got ${url.protocol}`;
  } else return `${at}.transport.type must be "stdio" or "http"`;
  for (const list of ["allow", "deny"] as const) {
    const v = config[list];
    if (v !== undefined && (!Array.isArray(v) || v.some((x) => typeof x !== "string")))
      return `${at}.${list} must be an array of tool names`;
  }
  for (const cap of ["maxDescriptionBytes", "maxSchemaBytes", "maxToolsBytes"] as const) {
    const v = config[cap];
    if (v !== undefined && (!Number.isInteger(v) || v < 1 || v > MCP_CEILINGS[cap]))
      return `${at}.${cap} must be an integer from 1 to ${MCP_CEILINGS[cap]}, got ${JSON.stringify(v)}`;
  }
  const backoff = config.retryBackoff;
  if (backoff !== undefined) {
    for (const key of ["initialMs", "maxMs"] as const) {
      const v = backoff?.[key];
      if (v !== undefined && (typeof v !== "number" || !Number.isFinite(v) || v < 0))
        return `${at}.retryBackoff.${key} must be a number of milliseconds >= 0, got ${JSON.stringify(v)}`;
    }
  }
  return undefined;
}

/** The model-facing name of a server's tool. Providers accept [A-Za-z0-9_-]{1,64}. */
export function prefixedToolName(server: string, tool: string): string {
  return `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64);
}
