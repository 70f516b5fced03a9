/**
 * The config module the soak's worker processes load (JAI_CONFIG): the scripted model `soak/scripted`, the
 * ledger tools, the soak's MCP server (SOAK_MCP_URL) and its webhook receiver. The payload codec and the
 * webhook secret come from the environment, as an operator sets them (JAI_CODEC_KEYS, JAI_WEBHOOK_SECRET_SOAK
 * with JAI_WEBHOOK_ORIGINS_SOAK naming the receiver's origin). The soak transpiles it (and script-model.ts) next
 * to the built dist, so the worker process, as the image starts it, loads it with plain node and shares its
 * `@jai/ai` and `@temporalio/activity`.
 *
 * Every ledger tool appends one line to the ledger file (SOAK_LEDGER) when its effect happens: the run, the
 * call, the activity attempt, whether it is a local one, this process's pid, an id of this execution (one per
 * `execute`: a retry has another), when the attempt was scheduled and when `execute` began, when the effect was
 * written, and a token that only this execution returns (in `details`, which the transcript checks leave out).
 * As `execute` returns it appends the execution's completion record (`kind: "done"`): an execution killed or
 * frozen between its effect and its completion has none, or a late one. The ledger check (ledger.ts) excuses a
 * second effect only when these records and the fault log say a retry could have written it. One
 * `appendFileSync` of a short line is one write(2) on an O_APPEND file: a SIGKILL leaves the line whole or
 * absent, never half, so the ledger cannot invent a duplicate.
 */
import { appendFileSync } from "node:fs";
import { createHash, randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { Context as ActivityContext } from "@temporalio/activity";
import {
  fauxAssistantMessage,
  fauxText,
  fauxToolCall,
  registerFauxProvider,
  Type,
  type Context,
  type Message,
} from "@jai/ai";
import type { AgentTool } from "../../src/shared/contracts.js";
import type { McpServerConfig } from "../../src/worker/mcp/config.js";
import { canonical, plan, SOAK_MCP, SOAK_TOOLS, toMsg, toolAnswer, withoutDetails } from "./script-model.js";

const ledgerFile = process.env.SOAK_LEDGER;
const contextsFile = process.env.SOAK_CONTEXTS;
const toolMs = Number(process.env.SOAK_TOOL_MS ?? "300");
const heartbeatTimeout = process.env.SOAK_HEARTBEAT_TIMEOUT ?? "5s";
/**
 * `npm run soak -- --sabotage`: one call in ~15 records its effect twice (the same execution, a few ms apart), to
 * show the ledger check bites. The injected line is marked `sabotage` so the soak can count them; the check
 * never reads the mark.
 */
const sabotage = process.env.SOAK_SABOTAGE === "1";

function ledgerTool(name: string, extra: Partial<AgentTool>): AgentTool {
  return {
    name,
    label: name,
    description: `Soak ledger tool (${name}): records one effect for its key`,
    parameters: Type.Object({ key: Type.String() }),
    activity: { heartbeatTimeout },
    ...extra,
    async execute(toolCallId, args) {
      const { key } = args as { key: string };
      const started = Date.now();
      const exec = randomUUID();
      let info = { workflowId: "?", runId: "?", attempt: 0, scheduled: started, local: false };
      try {
        const i = ActivityContext.current().info;
        info = {
          workflowId: i.workflowExecution?.workflowId ?? "?",
          runId: i.workflowExecution?.runId ?? "?",
          attempt: i.attempt,
          scheduled: i.currentAttemptScheduledTimestampMs,
          local: i.isLocal,
        };
      } catch {
        // not in an activity (never in the soak)
      }
      const execution = {
        wf: info.workflowId,
        run: info.runId,
        call: toolCallId,
        exec,
        attempt: info.attempt,
        pid: process.pid,
      };
      await sleep(Math.round(toolMs * (0.5 + Math.random())));
      const token = randomUUID();
      const effect = (t: string, mark: { sabotage?: true } = {}) =>
        `${JSON.stringify({ ...execution, tool: name, key, local: info.local, scheduled: info.scheduled, started, token: t, t: Date.now(), ...mark })}\n`;
      if (ledgerFile) {
        appendFileSync(ledgerFile, effect(token));
        if (sabotage && Math.random() < 1 / 15) appendFileSync(ledgerFile, effect(randomUUID(), { sabotage: true }));
        appendFileSync(ledgerFile, `${JSON.stringify({ kind: "done", ...execution, t: Date.now() })}\n`);
      }
      return {
        content: [{ type: "text", text: toolAnswer(key) }],
        details: { token, pid: process.pid, attempt: info.attempt },
      };
    },
  };
}

export function soakTools(): AgentTool[] {
  return [
    ledgerTool(SOAK_TOOLS.par, {}),
    ledgerTool(SOAK_TOOLS.seq, { executionMode: "sequential" }),
    ledgerTool(SOAK_TOOLS.fast, { fast: true }),
    ledgerTool(SOAK_TOOLS.approve, { requiresApproval: true }),
    ledgerTool(SOAK_TOOLS.once, { idempotent: false }),
    {
      // A sub-agent: each call is a child agentRun of the scripted model with the call's prompt (its script).
      name: SOAK_TOOLS.sub,
      label: SOAK_TOOLS.sub,
      description: "Soak sub-agent: runs the script it is given",
      parameters: Type.Object({ key: Type.String(), prompt: Type.String() }),
      subAgent: { model: "soak/scripted", tools: [SOAK_TOOLS.par], maxTurns: 10 },
      async execute() {
        throw new Error("a sub-agent's calls run as child workflows");
      },
    },
  ];
}

export function soakModel() {
  const faux = registerFauxProvider({
    provider: "soak",
    api: "jai-soak-scripted",
    models: [{ id: "scripted", name: "soak scripted model", contextWindow: 200000, maxTokens: 2000 }],
    tokensPerSecond: 2000,
  });
  const answer = (context: Context) => {
    // What the model was given, for the driver's "context seen == context recorded" check.
    if (contextsFile) {
      let wf = "?";
      try {
        wf = ActivityContext.current().info.workflowExecution?.workflowId ?? "?";
      } catch {
        // not in an activity
      }
      const seen = canonical(withoutDetails(context.messages));
      const digest = createHash("sha256").update(seen).digest("hex");
      // the context itself too, so a mismatch can be shown (a few KB a call)
      appendFileSync(
        contextsFile,
        `${JSON.stringify({ wf, n: context.messages.length, digest, pid: process.pid, t: Date.now(), seen })}\n`,
      );
    }
    const next = plan(context.messages.map((m: Message) => toMsg(m as Parameters<typeof toMsg>[0])));
    if (!next) return fauxAssistantMessage("no soak script in the context", { stopReason: "stop" });
    return fauxAssistantMessage(
      [fauxText(next.text), ...next.calls.map((c) => fauxToolCall(c.name, c.args, { id: c.id }))],
      { stopReason: next.calls.length ? "toolUse" : "stop" },
    );
  };
  const endless = (context: Context) => {
    faux.appendResponses([endless]);
    return answer(context);
  };
  faux.setResponses(Array.from({ length: 1000 }, () => endless));
  return faux.getModel();
}

/** The soak's MCP server; the pid header lets the soak match a repeated call with the faults. */
function soakMcpServers(): McpServerConfig[] {
  const url = process.env.SOAK_MCP_URL;
  if (!url) return [];
  return [
    {
      name: SOAK_MCP.server,
      transport: { type: "http", url, headers: { [SOAK_MCP.pidHeader]: String(process.pid) } },
      activity: { heartbeatTimeout },
    },
  ];
}

export default () => ({
  tools: soakTools(),
  models: [soakModel()],
  mcpServers: soakMcpServers(),
  // The receiver listens on loopback, a private host: the documented switch for in-cluster receivers. The
  // secret and the origin it signs for come from JAI_WEBHOOK_SECRET_SOAK / JAI_WEBHOOK_ORIGINS_SOAK.
  webhooks: { allowPrivateHosts: true },
});
