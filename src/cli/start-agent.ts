/**
 * `jai-agent start --agent <name> "<prompt>"`: starts a run of a named agent (docs/console.md, "Agents and
 * New run") on the workers of its task queue and prints its id and the commands to follow and answer it.
 * The agent comes from the same config module the worker process loads (`--config` / JAI_CONFIG, else
 * ./jai.config.{js,mjs,ts}), resolved with `agentRunOptions` as `POST /runs { agent, prompt }` does, so the
 * CLI, the console and the worker agree on what an agent may do. Unlike a plain `jai-agent start`, no worker
 * runs in this process: the run is the worker process's.
 *
 * Exit codes: 0 started; 1 failed (config module that does not load, no server, a taken workflow id);
 * 2 bad usage (no prompt, no config, an unknown agent: the known ones are listed, an override it refuses, a bad
 * --tenant); 3 refused: the tenant is at a limit of the config's `tenants` (docs/tenants.md).
 */
import { readFileSync } from "node:fs";
import { AgentRequestError, agentRunOptions } from "../shared/agents.js";
import { TenantLimitError } from "../shared/tenants.js";
import { DEFAULT_TASK_QUEUE } from "../shared/definitions.js";
import { parseCli, reportFailure, UsageError } from "./program.js";

export const START_AGENT_USAGE = `usage: jai-agent start --agent <name> [options] "<prompt>" | -   (- reads the prompt from stdin)
  --config <module>         the worker's config module with the agents (else JAI_CONFIG, else ./jai.config.{js,mjs,ts})
  --model <provider/id>     --system-prompt <text>     --tools a,b     overrides, as far as the agent allows them
  --task-queue <queue>      when the agent names none (else JAI_TASK_QUEUE, else "${DEFAULT_TASK_QUEUE}", the worker's default)
  --tenant <name>           who the run is for: its AgentTenant search attribute and fairness key; the config's
                            tenants limits apply (1-64 letters, digits, ".", "_", "-"; docs/tenants.md)
  --workflow-id <id>        --json (prints { workflowId, agent, model, taskQueue })
  --address host:port       --namespace ns     (else TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, …, as the other commands)
  --debug                   a failure's stack trace`;

/** Starts the run; the exit code. */
export async function startByAgent(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  try {
    return await start(args, env);
  } catch (err) {
    if (err instanceof TenantLimitError) {
      console.error(err.message);
      return 3;
    }
    if (err instanceof AgentRequestError || (err instanceof Error && err.name === "InvalidRunInputError")) {
      console.error(`${err.message}\n${START_AGENT_USAGE}`);
      return 2;
    }
    // --help or a usage mistake with the usage; anything else (no server, a taken workflow id, ...) in one line.
    return reportFailure(err, START_AGENT_USAGE, args.includes("--debug"));
  }
}

async function start(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const parsed = parseCli(args, {
    agent: { type: "string" },
    config: { type: "string" },
    model: { type: "string" },
    "system-prompt": { type: "string" },
    tools: { type: "string" },
    "task-queue": { type: "string" },
    "workflow-id": { type: "string" },
    tenant: { type: "string" },
    json: { type: "boolean" },
    address: { type: "string" },
    namespace: { type: "string" },
  });
  const positionals = parsed.positionals;
  const values = parsed.values as Record<string, string | undefined> & { json?: boolean };
  if (!values.agent) throw new UsageError("--agent needs an agent name");
  const prompt =
    positionals.length === 1 && positionals[0] === "-" ? readFileSync(0, "utf8").trim() : positionals.join(" ").trim();
  if (!prompt) throw new UsageError("missing prompt");

  // Loaded once the arguments are good: --help and a usage mistake answer without them.
  const [{ findConfigFile, loadServiceConfig }, { startAgentRun }, { withCliClient }] = await Promise.all([
    import("../worker/process/config.js"),
    import("../client/client.js"),
    import("./connect.js"),
  ]);
  // The same module, found the same way, as the worker process: CLI and worker agree on the agents.
  let file: string | undefined;
  try {
    file = findConfigFile(values.config ?? env.JAI_CONFIG, process.cwd());
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (!file)
    throw new UsageError(
      `no config module declares agents here: name the worker's with --config <module> (or JAI_CONFIG), or add ./jai.config.{js,mjs,ts}`,
    );
  const config = await loadServiceConfig(file);
  const input = agentRunOptions(config.agents ?? [], {
    agent: values.agent,
    prompt,
    model: values.model,
    systemPrompt: values["system-prompt"],
    tools: values.tools
      ?.split(",")
      .map((t) => t.trim())
      .filter(Boolean),
    workflowId: values["workflow-id"],
    tenant: values.tenant,
  });
  const taskQueue = input.taskQueue ?? values["task-queue"] ?? env.JAI_TASK_QUEUE ?? DEFAULT_TASK_QUEUE;

  const { workflowId: id } = await withCliClient(
    { address: values.address, namespace: values.namespace },
    (client) => startAgentRun(client, { ...input, taskQueue, tenants: config.tenants }),
    env,
  );
  if (values.json) {
    const tenant = input.tenant !== undefined ? { tenant: input.tenant } : {};
    console.log(
      JSON.stringify({ workflowId: id, agent: values.agent, model: input.model, taskQueue, ...tenant }, null, 2),
    );
    return 0;
  }
  // The commands to type next, with the flags that found this server (the environment finds it again).
  const where = [
    values.address ? `--address ${values.address}` : "",
    values.namespace ? `--namespace ${values.namespace}` : "",
  ]
    .filter(Boolean)
    .join(" ");
  const cmd = (line: string) => `jai-agent ${line}${where ? ` ${where}` : ""}`;
  console.log(
    [
      `Started run ${id}: agent "${values.agent}", model ${String(input.model)}, task queue "${taskQueue}"`,
      `  follow it:  ${cmd(`watch ${id}`)}`,
      `  approvals:  ${cmd(`state ${id}`)}   then   ${cmd(`approve ${id} <toolCallId|--all>`)}   or   ${cmd(`deny ${id} <toolCallId> --reason "…"`)}`,
    ].join("\n"),
  );
  return 0;
}
