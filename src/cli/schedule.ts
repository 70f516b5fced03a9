/**
 * `npm run schedule -- <command>`: agent runs on Temporal Schedules.
 *
 *   create <id> --model provider/id --prompt text (--every 1h | --cron "0 9 * * *") [--task-queue q] [--overlap skip] [--tools a,b]
 *   list | describe <id> | pause <id> | unpause <id> | trigger <id> | delete <id>
 */
import type { AgentScheduleInfo, ScheduleAgentRunOptions } from "../schedules.js";
import { parseCli, runCli, UsageError } from "./program.js";

const USAGE = `usage: npm run schedule -- <command> [options]   (jai-agent schedule <command> ...)
  create <id> --model provider/id --prompt text (--every 1h | --cron "0 9 * * *")
              [--system text] [--tools a,b] [--max-turns n] [--overlap skip|buffer_one|buffer_all|cancel_other|terminate_other|allow_all]
              [--task-queue q] [--webhook url --webhook-secret name] [--paused]
  list
  describe <id> | pause <id> | unpause <id> | trigger <id> | delete <id>
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
  });
  if (given.help) {
    console.log(USAGE);
    return 0;
  }
  const values = given as Record<string, string | undefined> & { paused?: boolean };
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
  }

  // Loaded once the arguments are good: --help and a usage mistake answer without the client.
  const [{ connectCli }, schedules, { InvalidRunInputError }] = await Promise.all([
    import("./connect.js"),
    import("../schedules.js"),
    import("../client.js"),
  ]);
  const { describeAgentSchedule, listAgentSchedules, scheduleAgentRun } = schedules;
  // The environment the worker honours (address, namespace, TLS / API key, codec keys: a schedule's input is encrypted too).
  const connection = await connectCli({ address: values.address });
  const client = connection.client;
  const show = (s: AgentScheduleInfo) =>
    console.log(
      `${s.scheduleId}${s.paused ? " (paused)" : ""}  next: ${s.nextActionTimes[0]?.toISOString() ?? "-"}  recent: ${s.recentRuns.slice(-3).join(", ") || "-"}${s.note ? `  note: ${s.note}` : ""}`,
    );
  try {
    switch (command) {
      case "create":
        try {
          await scheduleAgentRun(client, options!);
        } catch (err) {
          // Bad options (they name the field, e.g. `Invalid schedule: "spec.cron" ...`): nothing was created.
          if (err instanceof InvalidRunInputError) throw new UsageError(err.message);
          throw err;
        }
        show(await describeAgentSchedule(client, id));
        break;
      case "list":
        for (const s of await listAgentSchedules(client)) show(s);
        break;
      case "describe":
        show(await describeAgentSchedule(client, id));
        break;
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
  } finally {
    await connection.close();
  }
}

runCli(USAGE, main);
