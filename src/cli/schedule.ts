/**
 * `npm run schedule -- <command>`: agent runs on Temporal Schedules.
 *
 *   create <id> --model provider/id --prompt text (--every 1h | --cron "0 9 * * *") [--task-queue q] [--overlap skip] [--tools a,b]
 *   list | describe <id> | pause <id> | unpause <id> | trigger <id> | delete <id>
 *
 * `create` checks the options and the model before it connects: a model neither @jai/ai's catalogue, the demo
 * model nor the workers' config module (--config, JAI_CONFIG, ./jai.config.*) has is refused with the nearest name,
 * instead of a schedule whose every run fails at setup. `describe` prints the schedule's spec, the run it starts,
 * its next firings and latest runs (`--json`: all of it).
 */
import type { Client } from "@temporalio/client";
import type { AgentScheduleDetails, AgentScheduleInfo, ScheduleAgentRunOptions } from "../client/schedules.js";
import { parseCli, runCli, UsageError } from "./program.js";

const USAGE = `usage: npm run schedule -- <command> [options]   (jai-agent schedule <command> ...)
  create <id> --model provider/id --prompt text (--every 1h | --cron "0 9 * * *")
              [--system text] [--tools a,b] [--max-turns n] [--overlap skip|buffer_one|buffer_all|cancel_other|terminate_other|allow_all]
              [--task-queue q] [--webhook url --webhook-secret name] [--paused] [--config module]
              the model: @jai/ai's catalogue, demo/offline-scripted, or the workers' config module's
              (--config, else JAI_CONFIG, else ./jai.config.{js,mjs,ts}); checked before anything is created
  list
  describe <id> [--json]   its spec, the run it starts, next firings, latest runs
  pause <id> | unpause <id> | trigger <id> | delete <id>
  --address host:port   default TEMPORAL_ADDRESS, the dev server of \`npm run temporal\`, or localhost:7233
  --debug               a failure's stack trace`;

const COMMANDS = ["create", "list", "describe", "pause", "unpause", "trigger", "delete"];

async function main(): Promise<number> {
  const { values: given, positionals } = parseCli(process.argv.slice(2), {
    address: { type: "string" },
    model: { type: "string" },
    prompt: { type: "string" },
    system: { type: "string" },
    tools: { type: "string" },
    "max-turns": { type: "string" },
    every: { type: "string" },
    cron: { type: "string" },
    overlap: { type: "string" },
    "task-queue": { type: "string" },
    webhook: { type: "string" },
    "webhook-secret": { type: "string" },
    paused: { type: "boolean" },
    config: { type: "string" },
    json: { type: "boolean" },
  });
  const values = given as Record<string, string | undefined> & { paused?: boolean; json?: boolean };
  const [command, id] = positionals;
  if (!command) throw new UsageError("missing command");
  if (!COMMANDS.includes(command)) throw new UsageError(`unknown command "${command}"`);
  if (command !== "list" && !id) throw new UsageError(`${command} needs a schedule id`);
  let options: ScheduleAgentRunOptions | undefined;
  if (command === "create") {
    if (!values.model || !values.prompt) throw new UsageError("create needs --model and --prompt");
    if (!values.every && !values.cron) throw new UsageError("create needs --every or --cron");
    options = {
      scheduleId: id,
      spec: { ...(values.every ? { interval: values.every } : {}), ...(values.cron ? { cron: values.cron } : {}) },
      model: values.model,
      prompt: values.prompt,
      ...(values.system ? { systemPrompt: values.system } : {}),
      ...(values.tools ? { tools: values.tools.split(",").filter(Boolean) } : {}),
      ...(values["max-turns"] ? { maxTurns: Number(values["max-turns"]) } : {}),
      ...(values.overlap ? { overlap: values.overlap as ScheduleAgentRunOptions["overlap"] } : {}),
      ...(values["task-queue"] ? { taskQueue: values["task-queue"] } : {}),
      ...(values.webhook ? { webhook: { url: values.webhook, secretName: values["webhook-secret"] ?? "" } } : {}),
      ...(values.paused ? { paused: true } : {}),
    };
    await checkCreate(options, values.config);
  }

  // Loaded once the arguments are good: --help and a usage mistake answer without the client.
  const [{ withCliClient }, schedules, { InvalidRunInputError }] = await Promise.all([
    import("./connect.js"),
    import("../client/schedules.js"),
    import("../client/client.js"),
  ]);
  const { describeAgentSchedule, listAgentSchedules, scheduleAgentRun } = schedules;
  const show = (s: AgentScheduleInfo) =>
    console.log(
      `${s.scheduleId}${s.paused ? " (paused)" : ""}  next: ${s.nextActionTimes[0]?.toISOString() ?? "-"}  recent: ${s.recentRuns.slice(-3).join(", ") || "-"}${s.note ? `  note: ${s.note}` : ""}`,
    );
  // The environment the worker honours (address, namespace, TLS / API key, codec keys: a schedule's input is encrypted too).
  return withCliClient({ address: values.address }, async (client) => {
    switch (command) {
      case "create":
        try {
          await scheduleAgentRun(client, options!);
        } catch (err) {
          // Bad options (they name the field, e.g. `Invalid schedule: "spec.cron" ...`): nothing was created.
          if (err instanceof InvalidRunInputError) throw new UsageError(err.message);
          throw err;
        }
        printDetails(await describeAgentSchedule(client, id), await runStatuses(client, id));
        break;
      case "list":
        for (const s of await listAgentSchedules(client)) show(s);
        break;
      case "describe": {
        const details = await describeAgentSchedule(client, id);
        if (values.json) console.log(JSON.stringify(details, null, 2));
        else printDetails(details, await runStatuses(client, details));
        break;
      }
      default: {
        const verb = command as "pause" | "unpause" | "trigger" | "delete";
        const act = {
          pause: schedules.pauseAgentSchedule,
          unpause: schedules.unpauseAgentSchedule,
          trigger: schedules.triggerAgentSchedule,
          delete: schedules.deleteAgentSchedule,
        }[verb];
        await act(client, id);
        console.log(`${id} ${{ pause: "paused", unpause: "unpaused", trigger: "triggered", delete: "deleted" }[verb]}`);
      }
    }
    return 0;
  });
}

/**
 * What `create` can tell before it connects: the options as scheduleAgentRun checks them, then the model (the
 * workers' config module is loaded, as the worker process and `start --agent` find it, for the models it declares).
 */
async function checkCreate(options: ScheduleAgentRunOptions, config: string | undefined): Promise<void> {
  const [{ scheduleOptionsProblem }, { modelProblem }, { findConfigFile, loadServiceConfig }] = await Promise.all([
    import("../client/schedules.js"),
    import("./model-check.js"),
    import("../worker/process/config.js"),
  ]);
  const problem = scheduleOptionsProblem(options);
  if (problem) throw new UsageError(problem.message);
  let file: string | undefined;
  try {
    file = findConfigFile(config ?? process.env.JAI_CONFIG, process.cwd());
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const served = file ? ((await loadServiceConfig(file)).models ?? []).map((m) => `${m.provider}/${m.id}`) : [];
  const wrong = modelProblem(String(options.model), served);
  if (wrong) throw new UsageError(wrong);
}

type Statuses = Map<string, string>;

/** The status of each of its latest runs (a run since deleted reads "-"). */
async function runStatuses(client: Client, schedule: string | AgentScheduleDetails): Promise<Statuses> {
  const { describeAgentSchedule } = await import("../client/schedules.js");
  const details = typeof schedule === "string" ? await describeAgentSchedule(client, schedule) : schedule;
  const out: Statuses = new Map();
  await Promise.all(
    details.recentActions.slice(-5).map(async (a) => {
      const status = await client.workflow
        .getHandle(a.workflowId)
        .describe()
        .then(
          (d) => d.status.name.toLowerCase(),
          () => "-",
        );
      out.set(a.workflowId, status);
    }),
  );
  return out;
}

const clip = (text: string, max = 200) => {
  const one = text.replace(/\s*\n\s*/g, " ").trim();
  return one.length > max ? `${one.slice(0, max)}…` : one;
};

/** A schedule, what it is made of, when it fires next and what it did last. */
function printDetails(d: AgentScheduleDetails, statuses: Statuses): void {
  const model = (m: unknown): string =>
    Array.isArray(m)
      ? m.map(model).join(" → ")
      : typeof m === "string"
        ? m
        : `${(m as { provider?: string }).provider}/${(m as { id?: string }).id}`;
  const prompt = d.input.prompt;
  const when = [...d.spec.cron.map((c) => `cron "${c}"`), ...d.spec.intervals.map((i) => `every ${i}`)].join("; ");
  const recent = d.recentActions
    .slice(-5)
    .reverse()
    .map((a) => `${a.takenAt.toISOString()}  ${a.workflowId}  ${statuses.get(a.workflowId) ?? "-"}`);
  const lines = [
    `schedule ${d.scheduleId}: ${d.paused ? "paused" : "active"}${d.note ? ` (note: ${d.note})` : ""}`,
    `  when:     ${when || "-"}${d.spec.timezone ? ` (${d.spec.timezone})` : " (UTC)"}; overlap ${d.overlap}`,
    `  starts:   model ${model(d.input.model)} on task queue "${d.taskQueue}"` +
      `; tools ${d.input.tools ? d.input.tools.join(", ") || "none" : "all the worker's"}` +
      (d.input.maxTurns !== undefined ? `; max turns ${d.input.maxTurns}` : ""),
    `  prompt:   ${typeof prompt === "string" ? clip(prompt) : clip(JSON.stringify(prompt))}`,
    ...(d.input.systemPrompt ? [`  system:   ${clip(d.input.systemPrompt)}`] : []),
    ...(d.input.webhook ? [`  webhook:  ${d.input.webhook.url}`] : []),
    `  next:     ${
      d.paused
        ? "- (paused)"
        : d.nextActionTimes
            .slice(0, 5)
            .map((t) => t.toISOString())
            .join(", ") || "-"
    }`,
    ...(recent.length
      ? recent.map((r, i) => `${i === 0 ? "  recent:   " : "            "}${r}`)
      : ["  recent:   - (no run yet)"]),
    `  created ${d.createdAt.toISOString()}; ${d.actionsTaken} run(s) started`,
  ];
  console.log(lines.join("\n"));
}

runCli(USAGE, main);
