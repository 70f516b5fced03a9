/**
 * People in the loop from a shell (`jai-agent <command>`, `npm run <command> --`): list runs, look at one, and
 * approve, deny, steer, follow up, prompt or cancel it through the client API (src/client/client.ts), connected like
 * the worker (src/cli/connect.ts: Temporal's environment configuration and JAI_CODEC_KEYS).
 *
 * Exit codes: 0 done; 1 refused or failed (one line on stderr: the run's reason, a finished run, no such run,
 * a missing codec key); 2 bad usage.
 */
import { readFileSync } from "node:fs";
import type { ParseArgsConfig } from "node:util";
import type { Client } from "@temporalio/client";
import type { Payload } from "@temporalio/common";
import type proto from "@temporalio/proto";
import type { AgentRunHandle } from "../client/client.js";
import type { AgentMessage, AgentRunState } from "../shared/contracts.js";
import { approvalPolicyProblem } from "../shared/approval-rules.js";
import type { RunRow } from "../shared/run-rows.js";
import { CliError, parseCli, runCli, UsageError } from "./program.js";

/** What the commands run with, loaded once their arguments are good: --help and a usage mistake answer without it. */
async function loadLib() {
  const [client, common, history, definitions, runList, connect, tenants] = await Promise.all([
    import("../client/client.js"),
    import("@temporalio/common"),
    import("../node/codec/history.js"),
    import("../shared/definitions.js"),
    import("../http/run-list.js"),
    import("./connect.js"),
    import("../shared/tenants.js"),
  ]);
  return {
    getAgentRun: client.getAgentRun,
    InvalidRunInputError: client.InvalidRunInputError,
    RunFinishedError: client.RunFinishedError,
    RunUpdateRejectedError: client.RunUpdateRejectedError,
    WorkflowNotFoundError: common.WorkflowNotFoundError,
    decodePayloads: history.decodePayloads,
    AGENT_RUN_WORKFLOW: definitions.AGENT_RUN_WORKFLOW,
    runRow: runList.runRow,
    withCliClient: connect.withCliClient,
    tenantProblem: tenants.tenantProblem,
  };
}
let lib: Awaited<ReturnType<typeof loadLib>>;

const RUNS_USAGE = `usage: jai-agent <command> [options]   (npm run <command> -- [options])
  runs [--status s[,s…]] [--tenant name] [--limit N] [--query "visibility query"] [--json]
        s: running | waiting (for approval, a client or a prompt) | waiting_for_approval | waiting_for_client | waiting_for_prompt
           | completed | failed | cancelled | open | closed
  state <workflowId> [--json]
  approve <workflowId> <toolCallId | --all> [--remember]   (--remember: stop asking for that tool in this run)
  deny <workflowId> <toolCallId> [--reason text]
  tool-result <workflowId> <toolCallId> <json | -> [--error]   (a client tool's result; - reads stdin)
  policy <workflowId> <json | ->            (replaces the run's approval policy)
  steer <workflowId> <message | ->          (- reads the message from stdin)
  follow-up <workflowId> <message | ->
  prompt <workflowId> <message | -> [--json]  (session runs: waits for the answer)
  cancel <workflowId> [--wait]
every command: [--address host:port] [--namespace ns]; otherwise TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE,
TEMPORAL_API_KEY, TEMPORAL_TLS_*, TEMPORAL_PROFILE (temporal.toml), the \`npm run temporal\` server, localhost:7233.
Encrypted runs need the workers' JAI_CODEC_KEYS (or JAI_CODEC_KEY_FILE).`;

const COMMON: NonNullable<ParseArgsConfig["options"]> = {
  address: { type: "string" },
  namespace: { type: "string" },
};

function parse(args: string[], options: ParseArgsConfig["options"], positionals: number, names: string) {
  const parsed = parseCli(args, { ...COMMON, ...options });
  if (parsed.positionals.length < positionals) throw new UsageError(`missing ${names}`);
  return parsed as { values: Record<string, string | boolean | undefined>; positionals: string[] };
}

/** The message of steer / follow-up / prompt: the rest of the arguments, or stdin for "-". */
function message(words: string[]): string {
  const text = words.length === 1 && words[0] === "-" ? readFileSync(0, "utf8").trim() : words.join(" ").trim();
  if (!text) throw new UsageError("missing message");
  return text;
}

/** A JSON argument (a client tool's result, a policy): the rest of the arguments, or stdin for "-". */
function jsonArgument(words: string[], what: string): unknown {
  const text = message(words);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`the ${what} must be JSON: ${(err as Error).message}`);
  }
}

const str = (v: string | boolean | undefined) => (typeof v === "string" ? v : undefined);
const json = (value: unknown) => console.log(JSON.stringify(value, null, 2));
const money = (usd: number | undefined) => `$${(usd ?? 0).toFixed(4)}`;
const oneLine = (s: string) => s.replace(/\s*\n\s*/g, " ").trim();
const clip = (s: string, max = 200) => (s.length > max ? `${s.slice(0, max)}…` : s);

function textOf(m: AgentMessage): string {
  if (typeof m.content === "string") return m.content;
  return m.content
    .filter((c) => c.type === "text")
    .map((c) => (c as { text: string }).text)
    .join("");
}

// ---------------------------------------------------------------------------------------------- runs (list)

/** The agent statuses each --status word stands for; `execution` is the Temporal status used without them. */
const STATUS_FILTERS: Record<string, { agent?: string[]; execution: string[] }> = {
  running: { agent: ["running"], execution: ["Running"] },
  waiting: { agent: ["waiting_for_approval", "waiting_for_client", "waiting_for_prompt"], execution: ["Running"] },
  waiting_for_approval: { agent: ["waiting_for_approval"], execution: ["Running"] },
  waiting_for_client: { agent: ["waiting_for_client"], execution: ["Running"] },
  waiting_for_prompt: { agent: ["waiting_for_prompt"], execution: ["Running"] },
  completed: { agent: ["completed"], execution: ["Completed"] },
  failed: { agent: ["failed"], execution: ["Failed", "Terminated", "TimedOut"] },
  cancelled: { agent: ["cancelled"], execution: ["Canceled"] },
  open: { execution: ["Running"] },
  closed: { execution: ["Completed", "Failed", "Canceled", "Terminated", "TimedOut", "ContinuedAsNew"] },
};
STATUS_FILTERS.canceled = STATUS_FILTERS.cancelled;
STATUS_FILTERS.approval = STATUS_FILTERS.waiting_for_approval;

const quoted = (values: string[]) => values.map((v) => JSON.stringify(v)).join(", ");

/** The visibility query for `statuses`: by AgentStatus (with the agent's search attributes), else by Temporal's status. */
function runsQuery(statuses: string[], withAttributes: boolean, extra?: string): string {
  const parts = [`WorkflowType = ${JSON.stringify(lib.AGENT_RUN_WORKFLOW)}`];
  if (statuses.length > 0) {
    const alternatives = statuses.map((s) => {
      const f = STATUS_FILTERS[s];
      const byExecution = `ExecutionStatus IN (${quoted(f.execution)})`;
      if (!withAttributes || !f.agent) return byExecution;
      // An open run by its AgentStatus; a failed one also when Temporal ended it (terminated, timed out) before the run could say so.
      const byAgent = `AgentStatus IN (${quoted(f.agent)})`;
      if (f.execution.includes("Running")) return `(${byAgent} AND ExecutionStatus = "Running")`;
      return s === "failed" ? `(${byAgent} OR ExecutionStatus IN ("Terminated", "TimedOut"))` : byAgent;
    });
    parts.push(alternatives.length === 1 ? alternatives[0] : `(${alternatives.join(" OR ")})`);
  }
  if (extra) parts.push(`(${extra})`);
  return parts.join(" AND ");
}

/** A listed run: the console's row (src/http/run-list.ts), filled from the memo where the namespace lacks the attributes. */
type RunListing = RunRow;

type RawExecution = proto.temporal.api.workflow.v1.IWorkflowExecutionInfo;

/** The memo's fields, or {} when they cannot be read (e.g. encrypted under a key this process lacks). */
async function memoOf(client: Client, raw: RawExecution): Promise<Record<string, unknown>> {
  const fields = Object.entries(raw.memo?.fields ?? {});
  if (fields.length === 0) return {};
  const { payloadCodecs, payloadConverter } = client.options.loadedDataConverter;
  try {
    const decoded = await lib.decodePayloads(
      fields.map(([, p]) => p as Payload),
      payloadCodecs,
    );
    return Object.fromEntries(fields.map(([k], i) => [k, payloadConverter.fromPayload(decoded[i])]));
  } catch {
    return {};
  }
}

async function listing(client: Client, raw: RawExecution): Promise<RunListing> {
  const row = lib.runRow(raw);
  if (row.model !== undefined) return row;
  // A namespace without the agent's search attributes: the memo says what the run could.
  const memo = await memoOf(client, raw);
  const text = (v: unknown) => (typeof v === "string" ? v : undefined);
  const count = (v: unknown) => (typeof v === "number" ? v : undefined);
  const filled: RunListing = {
    ...row,
    model: text(memo.model),
    turns: row.turns ?? count(memo.turns),
    totalTokens: row.totalTokens ?? count(memo.totalTokens),
    stopReason: row.stopReason ?? text(memo.stopReason),
  };
  return Object.fromEntries(Object.entries(filled).filter(([, v]) => v !== undefined)) as RunListing;
}

/**
 * Agent runs from visibility, newest first. Listed with the raw service call (search attributes are never
 * encrypted), so runs are listed without the codec keys too.
 */
async function listRuns(
  client: Client,
  options: { statuses?: string[]; limit?: number; query?: string } = {},
): Promise<{ runs: RunListing[]; query: string; withAttributes: boolean }> {
  const statuses = options.statuses ?? [];
  const limit = options.limit ?? 50;
  const fetch = async (query: string) => {
    const runs: RunListing[] = [];
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await client.workflowService.listWorkflowExecutions({
        namespace: client.options.namespace,
        query,
        pageSize: Math.min(limit - runs.length, 1000),
        nextPageToken,
      });
      for (const raw of page.executions ?? []) if (runs.length < limit) runs.push(await listing(client, raw));
      nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
    } while (nextPageToken && runs.length < limit);
    return runs;
  };
  const byAgent = runsQuery(statuses, true, options.query);
  try {
    return { runs: await fetch(byAgent), query: byAgent, withAttributes: true };
  } catch (err) {
    // A namespace without the agent's search attributes refuses a query naming them: fall back to Temporal's status.
    const byExecution = runsQuery(statuses, false, options.query);
    if (byExecution === byAgent || !/AgentStatus/.test((err as Error).message)) throw err;
    return { runs: await fetch(byExecution), query: byExecution, withAttributes: false };
  }
}

async function runsCommand(client: Client, values: Record<string, string | boolean | undefined>): Promise<number> {
  const statuses = (str(values.status) ?? "")
    .split(",")
    .map((s) => s.trim().toLowerCase().replace(/-/g, "_"))
    .filter(Boolean);
  for (const s of statuses)
    if (!STATUS_FILTERS[s])
      throw new UsageError(`unknown --status "${s}" (one of ${Object.keys(STATUS_FILTERS).join(", ")})`);
  const limit = str(values.limit) === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit must be a positive integer`);
  const tenant = str(values.tenant);
  if (tenant !== undefined) {
    const bad = lib.tenantProblem(tenant);
    if (bad) throw new UsageError(`--tenant: ${bad}`);
  }
  // A tenant's runs: its AgentTenant (a valid tenant name cannot leave the quotes).
  const query = [str(values.query), tenant && `AgentTenant = ${JSON.stringify(tenant)}`]
    .filter(Boolean)
    .join(") AND (");
  const { runs, withAttributes } = await listRuns(client, { statuses, limit, query: query || undefined });
  if (!withAttributes)
    console.error(
      `note: namespace "${client.options.namespace}" lacks the AgentStatus search attribute: filtered by Temporal's status (a waiting run is a running one)`,
    );
  if (values.json) {
    json(runs);
    return 0;
  }
  const rows = runs.map((r) => [
    r.workflowId,
    r.status,
    r.model ?? "-",
    `${r.turns ?? "-"} turns`,
    `${r.totalTokens ?? "-"} tokens`,
    r.startTime ?? "-",
    clip(oneLine(r.summary ?? ""), 80),
  ]);
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((row) => row[i].length))) ?? [];
  for (const row of rows)
    console.log(
      row
        .map((cell, i) => (i < row.length - 1 ? cell.padEnd(widths[i]) : cell))
        .join("  ")
        .trimEnd(),
    );
  return 0;
}

// ---------------------------------------------------------------------------------------------- state

function printState(workflowId: string, s: AgentRunState): void {
  console.log(
    `run ${workflowId}: ${s.status} · ${s.phase} · turn ${s.turn} · ${s.usage.totalTokens} tokens · ${money(s.usage.cost?.total)} · ${s.messageCount} messages`,
  );
  for (const a of s.pendingApprovals)
    console.log(
      `waiting for approval: ${a.toolCallId} ${a.toolName} ${clip(JSON.stringify(a.args) ?? "")} (since ${a.since})\n` +
        `  jai-agent approve ${workflowId} ${a.toolCallId}   |   jai-agent deny ${workflowId} ${a.toolCallId} --reason "…"`,
    );
  const running = s.pendingToolCalls.filter((c) => !s.pendingApprovals.some((a) => a.toolCallId === c.toolCallId));
  for (const c of running)
    console.log(`tool call: ${c.toolCallId} ${c.toolName} ${c.started ? "running" : "not started"}`);
  if (s.queuedSteering || s.queuedFollowUps)
    console.log(`queued: ${s.queuedSteering} steering, ${s.queuedFollowUps} follow-up(s)`);
  if (s.stopReason) console.log(`stopped: ${s.stopReason}${s.errorMessage ? ` · ${oneLine(s.errorMessage)}` : ""}`);
  for (const d of s.dropped ?? []) console.log(`dropped ${d.kind}: ${clip(oneLine(d.preview), 80)} (${d.reason})`);
}

// ---------------------------------------------------------------------------------------------- commands

type Command = (args: string[]) => {
  values: Record<string, string | boolean | undefined>;
  run(client: Client): Promise<number>;
};

/** `steer` and `follow-up`: one message queued for the run; prints how many wait. */
function queueMessage(
  args: string[],
  what: string,
  send: (run: AgentRunHandle, text: string) => Promise<{ queued: number }>,
): ReturnType<Command> {
  const p = parse(args, {}, 2, "<workflowId> <message>");
  const text = message(p.positionals.slice(1));
  return {
    values: p.values,
    run: async (client) => {
      const { queued } = await send(lib.getAgentRun(client, p.positionals[0]), text);
      console.log(`${what} accepted (${queued} queued)`);
      return 0;
    },
  };
}

const COMMANDS: Record<string, Command> = {
  list: (args) => {
    const p = parse(
      args,
      {
        status: { type: "string" },
        limit: { type: "string" },
        query: { type: "string" },
        tenant: { type: "string" },
        json: { type: "boolean" },
      },
      0,
      "",
    );
    return { values: p.values, run: (client) => runsCommand(client, p.values) };
  },
  state: (args) => {
    const p = parse(args, { json: { type: "boolean" } }, 1, "<workflowId>");
    return {
      values: p.values,
      run: async (client) => {
        const state = await lib.getAgentRun(client, p.positionals[0]).state();
        if (p.values.json) json(state);
        else printState(p.positionals[0], state);
        return 0;
      },
    };
  },
  approve: (args) => {
    const p = parse(
      args,
      { all: { type: "boolean" }, remember: { type: "boolean" } },
      1,
      "<workflowId> <toolCallId | --all>",
    );
    const [id, callId] = p.positionals;
    if (!p.values.all === !callId) throw new UsageError("approve needs a <toolCallId> or --all (not both)");
    return {
      values: p.values,
      run: async (client) => {
        const handle = lib.getAgentRun(client, id);
        const ids = callId ? [callId] : (await handle.state()).pendingApprovals.map((a) => a.toolCallId);
        if (ids.length === 0) console.error(`run ${id}: no tool call waits for approval`);
        for (const toolCallId of ids) {
          await handle.approve(toolCallId, p.values.remember ? { remember: true } : undefined);
          console.log(`approved ${toolCallId}${p.values.remember ? " (and its tool for the rest of the run)" : ""}`);
        }
        return 0;
      },
    };
  },
  deny: (args) => {
    const p = parse(args, { reason: { type: "string" } }, 2, "<workflowId> <toolCallId>");
    const [id, callId] = p.positionals;
    return {
      values: p.values,
      run: async (client) => {
        await lib.getAgentRun(client, id).deny(callId, str(p.values.reason));
        console.log(`denied ${callId}`);
        return 0;
      },
    };
  },
  "tool-result": (args) => {
    const p = parse(args, { error: { type: "boolean" } }, 3, "<workflowId> <toolCallId> <json | ->");
    const [id, callId] = p.positionals;
    const result = jsonArgument(p.positionals.slice(2), "result");
    return {
      values: p.values,
      run: async (client) => {
        await lib
          .getAgentRun(client, id)
          .submitToolResult(callId, result, p.values.error ? { isError: true } : undefined);
        console.log(`result submitted for ${callId}`);
        return 0;
      },
    };
  },
  policy: (args) => {
    const p = parse(args, {}, 2, "<workflowId> <json | ->");
    const policy = jsonArgument(p.positionals.slice(1), "policy");
    // A malformed policy is a usage error (exit 2), refused before anything reaches the run.
    const problem = approvalPolicyProblem(policy, "policy");
    if (problem) throw new UsageError(`invalid approval policy: ${problem}`);
    return {
      values: p.values,
      run: async (client) => {
        json(await lib.getAgentRun(client, p.positionals[0]).setApprovalPolicy(policy as never));
        return 0;
      },
    };
  },
  steer: (args) => queueMessage(args, "steering", (run, text) => run.steer(text)),
  "follow-up": (args) => queueMessage(args, "follow-up", (run, text) => run.followUp(text)),
  prompt: (args) => {
    const p = parse(args, { json: { type: "boolean" } }, 2, "<workflowId> <message>");
    const text = message(p.positionals.slice(1));
    return {
      values: p.values,
      run: async (client) => {
        const answer = await lib.getAgentRun(client, p.positionals[0]).prompt(text);
        if (p.values.json) json(answer);
        else {
          for (const m of answer.messages) if (m.role === "assistant" && textOf(m)) console.log(textOf(m));
          if (answer.stopReason !== "stop")
            console.error(`(${answer.stopReason}${answer.errorMessage ? `: ${oneLine(answer.errorMessage)}` : ""})`);
        }
        return answer.stopReason === "error" ? 1 : 0;
      },
    };
  },
  cancel: (args) => {
    const p = parse(args, { wait: { type: "boolean" } }, 1, "<workflowId>");
    const id = p.positionals[0];
    return {
      values: p.values,
      run: async (client) => {
        const handle = lib.getAgentRun(client, id);
        await handle.cancel();
        console.log(`cancellation requested: ${id}`);
        if (p.values.wait) console.log(`ended: ${(await handle.result()).stopReason}`);
        return 0;
      },
    };
  },
};

/** One line for what the client API throws; undefined for anything else. */
function clearError(err: unknown, namespace: string): string | undefined {
  if (err instanceof lib.WorkflowNotFoundError)
    return `no run ${err.workflowId ? `"${err.workflowId}" ` : ""}in namespace "${namespace}"`;
  if (
    err instanceof lib.RunUpdateRejectedError ||
    err instanceof lib.RunFinishedError ||
    err instanceof lib.InvalidRunInputError
  )
    return err.message;
  return undefined;
}

async function main(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  const command = name ? COMMANDS[name === "runs" ? "list" : name] : undefined;
  if (!command) throw new UsageError(name ? `unknown command "${name}"` : "missing command");
  const parsed = command(args);
  lib = await loadLib();
  let namespace = str(parsed.values.namespace) ?? "default";
  try {
    return await lib.withCliClient(
      { address: str(parsed.values.address), namespace: str(parsed.values.namespace) },
      (client) => {
        namespace = client.options.namespace;
        return parsed.run(client);
      },
    );
  } catch (err) {
    // What the client API throws, in one line naming the run; the rest (no server, no codec key) as every command says it.
    const clear = clearError(err, namespace);
    throw clear ? new CliError(oneLine(clear)) : err;
  }
}

runCli(RUNS_USAGE, () => main(process.argv.slice(2)));
