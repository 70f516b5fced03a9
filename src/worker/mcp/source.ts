/**
 * MCP servers as a source of AgentTools. The setup activity lists the servers'
 * tools for each run; the tool activity finds a tool by its prefixed name on
 * whichever worker runs the call (listing that server first if this worker has
 * not yet), so calls need no particular worker.
 */
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import type { TSchema } from "@sinclair/typebox";
import type { AgentTool, AgentToolResult } from "../../shared/contracts.js";
import {
  checkMcpServerConfig,
  MCP_CEILINGS,
  MCP_DEFAULT_BACKOFF,
  MCP_DEFAULT_LIMITS,
  prefixedToolName,
  type McpServerConfig,
} from "./config.js";
import { isConnectionLost, McpConnection } from "./connection.js";
import { fromMcpResult } from "./content.js";

const DEFAULT_REQUEST_TIMEOUT_MS = 10 * 60_000;
/** Fresh connections a call may use after the server died under it. */
const CRASH_REPEATS = 2;
/** A server's listing stops after this many pages or tools (a cursor that never ends must not hold a run). */
const MAX_PAGES = 50;
const MAX_LISTED = 2_000;
/** A server's text quoted in our errors and warnings (it may be megabytes long). */
const MAX_QUOTED = 500;

/** Failure type of a run's setup when the run names a tool of a server that cannot be listed. */
export const McpServerUnavailable = "McpServerUnavailable";

interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean };
}

/** How a server fared at its last listing, for operators (`McpToolSource.status()`). */
export interface McpServerStatus {
  name: string;
  /** False after a failed connect or listing, until a listing succeeds again. */
  ok: boolean;
  /** The last failure. */
  error?: string;
  /** Failures in a row. */
  failures: number;
  /** Not asked again before this time (ms since the epoch). */
  retryAt?: number;
}

export interface McpToolSourceOptions {
  /** Where warnings go (a server left out, a tool cut or dropped); default the activity's logger, else console.warn. */
  warn?: (message: string) => void;
}

interface Listing {
  tools: AgentTool<any>[];
  /** UTF-8 bytes of each tool as its setup records it, by name. */
  bytes: Map<string, number>;
}

const bytes = (s: string) => Buffer.byteLength(s, "utf8");
const clip = (s: string, max = MAX_QUOTED) => (s.length > max ? `${s.slice(0, max)}… (${s.length} characters)` : s);
const errorText = (err: unknown) => clip(err instanceof Error ? err.message : String(err));

/** `text` within `max` UTF-8 bytes, a marker saying how much was cut included; never splits a character. */
export function capDescription(text: string, max: number): string {
  const n = bytes(text);
  if (n <= max) return text;
  const marker = ` …[cut by the worker: ${n} bytes, over the ${max}-byte cap]`;
  const room = Math.max(0, max - bytes(marker));
  const head = Buffer.from(text, "utf8")
    .subarray(0, room)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return head + marker;
}

function defaultWarn(message: string): void {
  try {
    Context.current().log.warn(message);
  } catch {
    console.warn(message);
  }
}

export class McpToolSource {
  private readonly connections: McpConnection[];
  /** Each server's tools by prefixed name, from its last successful listing. */
  private readonly byServer = new Map<string, Map<string, AgentTool<any>>>();
  private readonly health = new Map<string, { error: string; failures: number; retryAt: number }>();
  /** One listing per server at a time: runs set up together share it (and a dead server fails once). */
  private readonly listing = new Map<string, Promise<Listing>>();
  private readonly warned = new Set<string>();
  private readonly warn: (message: string) => void;

  constructor(servers: McpServerConfig[], env: NodeJS.ProcessEnv = process.env, options: McpToolSourceOptions = {}) {
    const names = new Set<string>();
    servers.forEach((server, i) => {
      const problem = checkMcpServerConfig(server, `mcpServers[${i}]`);
      if (problem) throw new Error(`Invalid MCP server configuration: ${problem}`);
      if (names.has(server.name))
        throw new Error(`Invalid MCP server configuration: two servers are named "${server.name}"`);
      names.add(server.name);
    });
    this.connections = servers.map((s) => new McpConnection(s, env));
    this.warn = options.warn ?? defaultWarn;
  }

  /** The servers' names. */
  get servers(): string[] {
    return this.connections.map((c) => c.config.name);
  }

  /** The live connection of a server (e.g. its stdio process id). */
  connection(server: string): McpConnection | undefined {
    return this.connections.find((c) => c.config.name === server);
  }

  /** Each server's health as of its last listing. */
  status(): McpServerStatus[] {
    return this.connections.map((c) => {
      const h = this.health.get(c.config.name);
      return h
        ? { name: c.config.name, ok: false, error: h.error, failures: h.failures, retryAt: h.retryAt }
        : { name: c.config.name, ok: true, failures: 0 };
    });
  }

  /**
   * Lists the tools of the servers that `names` (prefixed tool names) need, or
   * of every server when `names` is absent; always asks the servers (their tool
   * lists may change between runs), except one that failed within its backoff.
   * A server that fails is left out with a warning when `names` is absent, and
   * fails the setup (`McpServerUnavailable`, not retried) when the run names its tools.
   * A tool named like one in `reserved` (the native tools) is left out, and all
   * servers' tools together stay within `MCP_CEILINGS.toolsBytes`.
   */
  async listTools(names?: string[], reserved: Iterable<string> = []): Promise<AgentTool<any>[]> {
    const wanted =
      names === undefined
        ? this.connections
        : this.connections.filter((c) => names.some((n) => n.startsWith(`${c.config.name}__`)));
    const results = await Promise.allSettled(wanted.map((c) => this.listServer(c)));
    const taken = new Set(reserved);
    const tools: AgentTool<any>[] = [];
    let left: number = MCP_CEILINGS.toolsBytes;
    results.forEach((result, i) => {
      const server = wanted[i].config.name;
      if (result.status === "rejected") {
        if (names !== undefined)
          throw ApplicationFailure.nonRetryable(
            `MCP server "${server}", whose tools the run names, is unavailable: ${errorText(result.reason)}`,
            McpServerUnavailable,
          );
        return; // left out; listServer warned when it failed
      }
      for (const tool of result.value.tools) {
        const size = result.value.bytes.get(tool.name)!;
        if (taken.has(tool.name)) {
          this.warnOnce(`MCP tool ${tool.label} is not offered: a native tool is named ${tool.name}`);
        } else if (size > left) {
          this.warnOnce(
            `MCP tool ${tool.label} is not offered: the tools of all MCP servers would exceed ${MCP_CEILINGS.toolsBytes} bytes`,
          );
        } else {
          left -= size;
          taken.add(tool.name);
          tools.push(tool);
        }
      }
    });
    return tools;
  }

  /** The tool with this prefixed name, listing its server if this worker has not yet. */
  async find(name: string): Promise<AgentTool<any> | undefined> {
    const connection = this.connections.find((c) => name.startsWith(`${c.config.name}__`));
    if (!connection) return undefined;
    const known = this.byServer.get(connection.config.name)?.get(name);
    if (known) return known;
    await this.listServer(connection);
    return this.byServer.get(connection.config.name)?.get(name);
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }

  private warnOnce(message: string): void {
    if (this.warned.has(message)) return;
    if (this.warned.size >= 1_000) this.warned.clear();
    this.warned.add(message);
    this.warn(message);
  }

  private listServer(connection: McpConnection): Promise<Listing> {
    const server = connection.config.name;
    const health = this.health.get(server);
    if (health && Date.now() < health.retryAt)
      return Promise.reject(new Error(`${health.error} (asked again after ${new Date(health.retryAt).toISOString()})`));
    let pending = this.listing.get(server);
    if (!pending) {
      pending = this.listAndCheck(connection).finally(() => this.listing.delete(server));
      this.listing.set(server, pending);
    }
    return pending;
  }

  private async listAndCheck(connection: McpConnection): Promise<Listing> {
    const config = connection.config;
    let listed: ListedTool[];
    try {
      listed = await this.fetchList(connection);
    } catch (err) {
      const failures = (this.health.get(config.name)?.failures ?? 0) + 1;
      const backoff = { ...MCP_DEFAULT_BACKOFF, ...config.retryBackoff };
      const wait = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.min(failures - 1, 30));
      const error = errorText(err);
      this.health.set(config.name, { error, failures, retryAt: Date.now() + wait });
      // A server that answered nonsense starts afresh next time too.
      await connection.reset();
      this.warn(
        `MCP server "${config.name}" is unavailable (${failures} failure${failures > 1 ? "s" : ""} in a row; asked again in ${wait} ms): ${error}. Runs that do not name its tools go without them.`,
      );
      throw err;
    }
    if (this.health.delete(config.name)) this.warn(`MCP server "${config.name}" is available again`);
    return this.check(connection, listed);
  }

  private async fetchList(connection: McpConnection): Promise<ListedTool[]> {
    const listed: ListedTool[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await this.withReconnect(connection, (client) => client.listTools(cursor ? { cursor } : {}));
      listed.push(...(page.tools as ListedTool[]));
      cursor = page.nextCursor;
      if (cursor && (++pages >= MAX_PAGES || listed.length >= MAX_LISTED)) {
        this.warnOnce(
          `MCP server "${connection.config.name}" lists more than ${MAX_PAGES} pages or ${MAX_LISTED} tools: the rest are not offered`,
        );
        break;
      }
    } while (cursor);
    return listed.slice(0, MAX_LISTED);
  }

  /** Caps descriptions, drops oversized schemas and duplicate names, keeps the server within its byte budget. */
  private check(connection: McpConnection, listed: ListedTool[]): Listing {
    const config = connection.config;
    const maxSchema = config.maxSchemaBytes ?? MCP_DEFAULT_LIMITS.maxSchemaBytes;
    const maxDescription = config.maxDescriptionBytes ?? MCP_DEFAULT_LIMITS.maxDescriptionBytes;
    let left = config.maxToolsBytes ?? MCP_DEFAULT_LIMITS.maxToolsBytes;
    const kept = new Map<string, AgentTool<any>>();
    const sizes = new Map<string, number>();
    for (const t of listed) {
      if ((config.allow && !config.allow.includes(t.name)) || (config.deny ?? []).includes(t.name)) continue;
      const tool = this.toAgentTool(connection, t);
      const original = tool.description;
      tool.description = capDescription(original, maxDescription);
      if (tool.description !== original)
        this.warnOnce(`MCP tool ${tool.label}: description of ${bytes(original)} bytes cut to ${maxDescription}`);
      const schemaBytes = bytes(JSON.stringify(tool.parameters));
      const first = kept.get(tool.name);
      if (schemaBytes > maxSchema) {
        this.warnOnce(
          `MCP tool ${tool.label} is not offered: its input schema has ${schemaBytes} bytes, over the ${maxSchema}-byte cap`,
        );
        continue;
      }
      if (first) {
        this.warnOnce(
          `MCP tool ${tool.label} is not offered: its name ${tool.name} is taken by ${first.label}, listed before it`,
        );
        continue;
      }
      const size = bytes(
        JSON.stringify({ name: tool.name, description: tool.description, parameters: tool.parameters }),
      );
      if (size > left) {
        this.warnOnce(
          `MCP tool ${tool.label} is not offered: the server's tools would exceed its ${config.maxToolsBytes ?? MCP_DEFAULT_LIMITS.maxToolsBytes}-byte budget`,
        );
        continue;
      }
      left -= size;
      kept.set(tool.name, tool);
      sizes.set(tool.name, size);
    }
    this.byServer.set(config.name, kept);
    return { tools: [...kept.values()], bytes: sizes };
  }

  /** Listing is safe to repeat: one retry on a fresh connection when the old one was dead (not when connecting failed). */
  private async withReconnect<T>(
    connection: McpConnection,
    fn: (client: Awaited<ReturnType<McpConnection["get"]>>) => Promise<T>,
  ): Promise<T> {
    const client = await connection.get();
    try {
      return await fn(client);
    } catch (err) {
      if (!isConnectionLost(err)) throw err;
      await connection.reset();
      return fn(await connection.get());
    }
  }

  private toAgentTool(connection: McpConnection, listed: ListedTool): AgentTool<any> {
    const config = connection.config;
    const repeatable =
      config.repeatAfterCrash ?? Boolean(listed.annotations?.readOnlyHint || listed.annotations?.idempotentHint);
    // "$schema" only names the dialect; the validator (draft-07) would refuse a 2020-12 URI it does not know.
    const { $schema: _dialect, ...schema } = listed.inputSchema;
    const rule = config.requiresApproval;
    const requiresApproval =
      typeof rule === "function"
        ? (args: Record<string, unknown>) => rule(listed.name, args)
        : Array.isArray(rule)
          ? rule.includes(listed.name)
          : rule;
    return {
      name: prefixedToolName(config.name, listed.name),
      label: `${config.name}: ${clip(listed.name, 100)}`,
      description: listed.description ?? `${listed.name} (MCP server ${config.name})`,
      parameters: schema as unknown as TSchema,
      ...(config.activity ? { activity: config.activity } : {}),
      ...(requiresApproval ? { requiresApproval } : {}),
      execute: async (_toolCallId, args, signal, onUpdate): Promise<AgentToolResult> => {
        for (let attempt = 0; ; attempt++) {
          try {
            const client = await connection.get();
            const result = await client.callTool(
              { name: listed.name, arguments: args as Record<string, unknown> },
              undefined,
              {
                // Aborting sends MCP's notifications/cancelled for this request.
                signal,
                timeout: config.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
                resetTimeoutOnProgress: true,
                onprogress: (p) =>
                  onUpdate?.({
                    content: [
                      {
                        type: "text",
                        text: `${p.message ?? "progress"}: ${p.progress}${p.total !== undefined ? `/${p.total}` : ""}`,
                      },
                    ],
                  }),
              },
            );
            return fromMcpResult(result);
          } catch (err) {
            if (signal?.aborted || !isConnectionLost(err)) throw err;
            await connection.reset();
            if (!repeatable) {
              throw new Error(
                `MCP server "${config.name}" went away during the call (${errorText(err)}); ${clip(listed.name, 100)} is not marked read-only or idempotent, so it was not repeated. It may have had effects.`,
              );
            }
            if (attempt >= CRASH_REPEATS)
              throw new Error(
                `MCP server "${config.name}" went away during ${attempt + 1} attempts of this call: ${errorText(err)}`,
              );
          }
        }
      },
    };
  }
}
