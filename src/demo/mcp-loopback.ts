/**
 * An MCP server of this process on a loopback port, over Streamable HTTP: the SDK's server, one per session (a
 * session's transport is kept until it closes). The tour (`npm start -- --tour`) and the soak serve their tools
 * this way, so a worker reaches them as it would any remote server.
 */
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

export interface LoopbackMcpServer {
  /** `http://127.0.0.1:<port>/mcp` */
  url: string;
  /** Closes every session and the listener. */
  close(): Promise<void>;
}

/** Serves a new `server()` per MCP session on 127.0.0.1 (a free port). */
export async function serveMcpOnLoopback(server: () => Server): Promise<LoopbackMcpServer> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer((req, res) => {
    const sid = req.headers["mcp-session-id"];
    void (async () => {
      let transport = typeof sid === "string" ? sessions.get(sid) : undefined;
      if (!transport) {
        const created = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, created),
        });
        created.onclose = () => void (created.sessionId && sessions.delete(created.sessionId));
        transport = created;
        await server().connect(created);
      }
      await transport.handleRequest(req, res);
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
