/**
 * The soak's MCP server: the SDK's server over Streamable HTTP on a loopback port of the soak process (as the
 * tour's), serving one tool, `lookup`, that the workers reach as they would any remote server. It records every
 * call it answers (the key, what it returned, which worker process asked) so the end of the soak can check that
 * each MCP result in a transcript is exactly what the server returned, and that the server saw the call.
 *
 * A call's key (`<script id>.<step key>`) is unique to one run and one call, so it plays the part the ledger's
 * run + call id plays: the MCP request carries no tool call id. The tool says `idempotentHint`: a call the
 * soak's kills cut may arrive twice, which is counted, not a violation (split by whether a fault explains it).
 */
import { setTimeout as sleep } from "node:timers/promises";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { serveMcpOnLoopback } from "../../src/demo/mcp-loopback.js";
import type { AgentMessage } from "../../src/shared/contracts.js";
import { mcpAnswer, SOAK_MCP, SOAK_TOOLS } from "./script-model.js";
import type { RunRecord } from "./workload.js";

export interface McpCall {
  key: string;
  text: string;
  pid: number;
  t: number;
}

export interface SoakMcpServer {
  url: string;
  calls: McpCall[];
  close(): Promise<void>;
}

function lookupServer(calls: McpCall[]): Server {
  const server = new Server({ name: "soak-mcp", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      {
        name: SOAK_MCP.tool,
        description: "Looks a key up (the soak's MCP tool)",
        inputSchema: { type: "object", properties: { key: { type: "string" } }, required: ["key"] },
        annotations: { idempotentHint: true },
      },
    ],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name !== SOAK_MCP.tool)
      return { isError: true, content: [{ type: "text", text: `no tool ${request.params.name}` }] };
    const key = String(request.params.arguments?.key ?? "");
    const pid = Number(extra.requestInfo?.headers[SOAK_MCP.pidHeader] ?? 0);
    // Long enough for a worker kill or freeze to land mid-call now and then.
    await sleep(100 + Math.random() * 300);
    const text = mcpAnswer(key);
    calls.push({ key, text, pid, t: Date.now() });
    return { content: [{ type: "text", text }] };
  });
  return server;
}

export async function startSoakMcpServer(): Promise<SoakMcpServer> {
  const calls: McpCall[] = [];
  const served = await serveMcpOnLoopback(() => lookupServer(calls));
  return { ...served, calls };
}

export interface McpReport {
  /** Calls the server answered (repeats included). */
  served: number;
  /** MCP results in the transcripts checked. */
  results: number;
  /** Calls the server answered more than once: a fault (kill, freeze, restart) explains them, or none does. */
  duplicates: { explained: number; unexplained: number };
  violations: { run: string; what: string }[];
}

/**
 * Every MCP result in an ended run's transcript: the server saw its call, and the text is what the server
 * returned for it, byte for byte. Repeats of a call are counted, split by whether a fault explains them.
 */
export function checkMcp(
  calls: McpCall[],
  runs: RunRecord[],
  faulted: { pids: Set<number>; windows: [number, number][] },
): McpReport {
  const byKey = new Map<string, McpCall[]>();
  for (const c of calls) byKey.set(c.key, [...(byKey.get(c.key) ?? []), c]);
  const report: McpReport = {
    served: calls.length,
    results: 0,
    duplicates: { explained: 0, unexplained: 0 },
    violations: [],
  };
  const explained = (c: McpCall) => faulted.pids.has(c.pid) || faulted.windows.some(([a, b]) => c.t >= a && c.t <= b);
  for (const run of runs) {
    const messages: AgentMessage[] = run.messages ?? [];
    messages.forEach((m, i) => {
      if (m.role !== "toolResult" || m.toolName !== SOAK_TOOLS.mcp) return;
      report.results++;
      const call = messages
        .slice(0, i)
        .reverse()
        .flatMap((x) => (x.role === "assistant" ? x.content : []))
        .find((b) => b.type === "toolCall" && b.id === m.toolCallId);
      const key = call?.type === "toolCall" ? String((call.arguments as { key?: unknown }).key) : "?";
      const text = m.content.map((b) => (b.type === "text" ? b.text : "")).join("");
      const seen = byKey.get(key) ?? [];
      if (m.isError) {
        // The expected-transcript check already flags an error result; here only what the server saw matters.
        return;
      }
      if (seen.length === 0)
        report.violations.push({
          run: run.id,
          what: `${m.toolCallId} (${key}): MCP result in the transcript, but the server never saw the call`,
        });
      else if (!seen.some((c) => c.text === text))
        report.violations.push({
          run: run.id,
          what: `${m.toolCallId} (${key}): transcript has ${JSON.stringify(text)}, the server returned ${JSON.stringify(seen[0].text)}`,
        });
      if (seen.length > 1) {
        // one of them is the recorded answer; the others are repeats
        const unexplained = seen.filter((c) => !explained(c)).length;
        if (unexplained <= 1) report.duplicates.explained += seen.length - 1;
        else report.duplicates.unexplained += seen.length - 1;
      }
    });
  }
  return report;
}
