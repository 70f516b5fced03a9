/** One worker's connection to one MCP server: opened on first use, opened again after the server goes away. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "./config.js";

const DEFAULT_CONNECT_TIMEOUT_MS = 30_000;

/** True when a request failed because the connection went away (the server exited, the HTTP session ended). */
export function isConnectionLost(err: unknown): boolean {
  if (err instanceof McpError) return err.code === ErrorCode.ConnectionClosed;
  return (
    err instanceof Error &&
    /not connected|connection closed|EPIPE|ECONNRESET|ECONNREFUSED|socket hang up/i.test(err.message)
  );
}

function transportFor(config: McpServerConfig, env: NodeJS.ProcessEnv): Transport {
  const t = config.transport;
  if (t.type === "stdio") {
    // stderr is inherited by default: a server's logs would interleave with the worker's; keep them apart.
    return new StdioClientTransport({ command: t.command, args: t.args, env: t.env, cwd: t.cwd, stderr: "ignore" });
  }
  const headers: Record<string, string> = { ...t.headers };
  for (const [header, variable] of Object.entries(t.headersFromEnv ?? {})) {
    const value = env[variable];
    if (value === undefined)
      throw new Error(
        `MCP server "${config.name}": header ${header} comes from the environment variable ${variable}, which is not set`,
      );
    headers[header] = value;
  }
  return new StreamableHTTPClientTransport(new URL(t.url), { requestInit: { headers } });
}

export class McpConnection {
  private client: Promise<Client> | undefined;
  private transport: Transport | undefined;

  constructor(
    readonly config: McpServerConfig,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** The connected client, connecting first when there is none (or the last one closed). */
  get(): Promise<Client> {
    if (!this.client) {
      const opening = this.open();
      this.client = opening;
      // A failed connect must not stick: the next call tries again.
      opening.catch(() => {
        if (this.client === opening) this.client = undefined;
      });
    }
    return this.client;
  }

  /** The server process id of a stdio connection (for operators and tests). */
  get pid(): number | undefined {
    return this.transport instanceof StdioClientTransport ? (this.transport.pid ?? undefined) : undefined;
  }

  private async open(): Promise<Client> {
    const client = new Client({ name: "jai-agent", version: "0.1.0" }, { capabilities: {} });
    const transport = transportFor(this.config, this.env);
    client.onclose = () => {
      // Only forget the client that closed, never a newer one.
      if (this.transport === transport) {
        this.client = undefined;
        this.transport = undefined;
      }
    };
    this.transport = transport;
    try {
      await client.connect(transport, { timeout: this.config.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS });
    } catch (err) {
      await client.close().catch(() => {});
      throw new Error(
        `MCP server "${this.config.name}": cannot connect: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    return client;
  }

  /** Drops the current client (after a lost connection) so the next `get()` opens a fresh one. */
  async reset(): Promise<void> {
    const current = this.client;
    this.client = undefined;
    this.transport = undefined;
    await current?.then((c) => c.close()).catch(() => {});
  }

  async close(): Promise<void> {
    await this.reset();
  }
}
