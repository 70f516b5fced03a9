/**
 * The tour's MCP server (a word counter), apart from the tour so that only the tour's MCP step loads the MCP SDK
 * (an optional package: src/node/optional-package.ts).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import type { McpServerConfig } from "../worker/mcp/config.js";
import { serveMcpOnLoopback } from "./mcp-loopback.js";
import { TOUR_TOOLS } from "./tour.js";

function countWordsServer(): Server {
  const server = new Server({ name: "jai-tour", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: "count_words",
        description: "Counts the words and characters of a text",
        inputSchema: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
        annotations: { readOnlyHint: true },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    if (request.params.name !== "count_words")
      return { isError: true, content: [{ type: "text", text: `no tool ${request.params.name}` }] };
    const text = String(request.params.arguments?.text ?? "");
    const words = text.split(/\s+/).filter(Boolean).length;
    return {
      content: [{ type: "text", text: `${words} words, ${[...text].length} characters (counted by the MCP server)` }],
    };
  });
  return server;
}

export interface TourMcpServer {
  /** The worker's `mcpServers` entry. */
  config: McpServerConfig;
  close(): Promise<void>;
}

/**
 * The tour's MCP server: the SDK's server (an optional package: without it the tour skips this step) over Streamable HTTP on a loopback port of this process. The worker reaches it
 * as it would any remote server: listed at each run's setup, called in tool activities.
 */
export async function startTourMcpServer(): Promise<TourMcpServer> {
  const served = await serveMcpOnLoopback(countWordsServer);
  return { config: { name: TOUR_TOOLS.mcpServer, transport: { type: "http", url: served.url } }, close: served.close };
}
