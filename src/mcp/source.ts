/**
 * MCP servers as a source of AgentTools. The setup activity lists the servers'
 * tools for each run; the tool activity finds a tool by its prefixed name on
 * whichever worker runs the call (listing that server first if this worker has
 * not yet), so calls need no particular worker.
 */
import type { TSchema } from "@sinclair/typebox";
import type { AgentTool, AgentToolResult } from "../types.js";
import { checkMcpServerConfig, prefixedToolName, type McpServerConfig } from "./config.js";
import { isConnectionLost, McpConnection } from "./connection.js";
import { fromMcpResult } from "./content.js";

const DEFAULT_REQUEST_TIMEOUT_MS = 10 * 60_000;
/** Fresh connections a call may use after the server died under it. */
const CRASH_REPEATS = 2;

interface ListedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
  annotations?: { readOnlyHint?: boolean; idempotentHint?: boolean };
}

const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

export class McpToolSource {
  private readonly connections: McpConnection[];
  private readonly byName = new Map<string, AgentTool<any>>();

  constructor(servers: McpServerConfig[], env: NodeJS.ProcessEnv = process.env) {
    const names = new Set<string>();
    servers.forEach((server, i) => {
      const problem = checkMcpServerConfig(server, `mcpServers[${i}]`);
      if (problem) throw new Error(`Invalid MCP server configuration: ${problem}`);
      if (names.has(server.name))
        throw new Error(`Invalid MCP server configuration: two servers are named "${server.name}"`);
      names.add(server.name);
    });
    this.connections = servers.map((s) => new McpConnection(s, env));
  }

  /** The servers' names. */
  get servers(): string[] {
    return this.connections.map((c) => c.config.name);
  }

  /** The live connection of a server (e.g. its stdio process id). */
  connection(server: string): McpConnection | undefined {
    return this.connections.find((c) => c.config.name === server);
  }

  /**
   * Lists the tools of the servers that `names` (prefixed tool names) need, or
   * of every server when `names` is absent; always asks the servers (their tool
   * lists may change between runs).
   */
  async listTools(names?: string[]): Promise<AgentTool<any>[]> {
    const wanted =
      names === undefined
        ? this.connections
        : this.connections.filter((c) => names.some((n) => n.startsWith(`${c.config.name}__`)));
    const lists = await Promise.all(wanted.map((c) => this.listServer(c)));
    return lists.flat();
  }

  /** The tool with this prefixed name, listing its server if this worker has not yet. */
  async find(name: string): Promise<AgentTool<any> | undefined> {
    const known = this.byName.get(name);
    if (known) return known;
    const connection = this.connections.find((c) => name.startsWith(`${c.config.name}__`));
    if (!connection) return undefined;
    await this.listServer(connection);
    return this.byName.get(name);
  }

  async close(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.close()));
  }

  private async listServer(connection: McpConnection): Promise<AgentTool<any>[]> {
    const config = connection.config;
    const listed: ListedTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.withReconnect(connection, (client) => client.listTools(cursor ? { cursor } : {}));
      listed.push(...(page.tools as ListedTool[]));
      cursor = page.nextCursor;
    } while (cursor);
    const tools = listed
      .filter((t) => (config.allow ? config.allow.includes(t.name) : true) && !(config.deny ?? []).includes(t.name))
      .map((t) => this.toAgentTool(connection, t));
    for (const tool of tools) this.byName.set(tool.name, tool);
    return tools;
  }

  /** Listing is safe to repeat: one retry on a fresh connection when the old one was dead. */
  private async withReconnect<T>(
    connection: McpConnection,
    fn: (client: Awaited<ReturnType<McpConnection["get"]>>) => Promise<T>,
  ): Promise<T> {
    try {
      return await fn(await connection.get());
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
      label: `${config.name}: ${listed.name}`,
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
                `MCP server "${config.name}" went away during the call (${errorText(err)}); ${listed.name} is not marked read-only or idempotent, so it was not repeated. It may have had effects.`,
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
