/**
 * `npm run schedule -- <command>`: agent runs on Temporal Schedules.
 *
 *   create <id> --model provider/id --prompt text (--every 1h | --cron "0 9 * * *") [--task-queue q] [--overlap skip] [--tools a,b]
 *   list | describe <id> | pause <id> | unpause <id> | trigger <id> | delete <id>
 */
import { parseArgs } from "node:util";
import {
  deleteAgentSchedule,
  describeAgentSchedule,
  listAgentSchedules,
  pauseAgentSchedule,
  scheduleAgentRun,
  triggerAgentSchedule,
  unpauseAgentSchedule,
  type AgentScheduleInfo,
  type ScheduleAgentRunOptions,
} from "../schedules.js";
import { connectCli } from "./connect.js";
import { InvalidRunInputError } from "../client.js";

const USAGE = `usage: npm run schedule -- <command> [options]
  create <id> --model provider/id --prompt text (--every 1h | --cron "0 9 * * *")
              [--system text] [--tools a,b] [--max-turns n] [--overlap skip|buffer_one|buffer_all|cancel_other|terminate_other|allow_all]
              [--task-queue q] [--webhook url --webhook-secret name] [--paused]
  list
  describe <id> | pause <id> | unpause <id> | trigger <id> | delete <id>
  --address host:port   default TEMPORAL_ADDRESS, the dev server of \`npm run temporal\`, or localhost:7233`;

const { values, positionals } = parseArgs({
  args: process.argv.slice(2),
  allowPositionals: true,
  options: {
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
  },
});
const [command, id] = positionals;
const fail = (message: string): never => {
  console.error(message);
  console.error(USAGE);
  process.exit(2);
};
if (!command) fail("missing command");
if (command !== "list" && !id) fail(`${command} needs a schedule id`);

// The environment the worker honours (address, namespace, TLS / API key, codec keys: a schedule's input is encrypted too).
const connection = await connectCli({ address: values.address });
const client = connection.client;
const show = (s: AgentScheduleInfo) =>
  console.log(
    `${s.scheduleId}${s.paused ? " (paused)" : ""}  next: ${s.nextActionTimes[0]?.toISOString() ?? "-"}  recent: ${s.recentRuns.slice(-3).join(", ") || "-"}${s.note ? `  note: ${s.note}` : ""}`,
  );

try {
  switch (command) {
    case "create": {
      if (!values.model || !values.prompt) fail("create needs --model and --prompt");
      if (!values.every && !values.cron) fail("create needs --every or --cron");
      const options: ScheduleAgentRunOptions = {
        scheduleId: id,
        spec: { ...(values.every ? { interval: values.every } : {}), ...(values.cron ? { cron: values.cron } : {}) },
        model: values.model!,
        prompt: values.prompt!,
        ...(values.system ? { systemPrompt: values.system } : {}),
        ...(values.tools ? { tools: values.tools.split(",").filter(Boolean) } : {}),
        ...(values["max-turns"] ? { maxTurns: Number(values["max-turns"]) } : {}),
        ...(values.overlap ? { overlap: values.overlap as ScheduleAgentRunOptions["overlap"] } : {}),
        ...(values["task-queue"] ? { taskQueue: values["task-queue"] } : {}),
        ...(values.webhook ? { webhook: { url: values.webhook, secretName: values["webhook-secret"] ?? "" } } : {}),
        ...(values.paused ? { paused: true } : {}),
      };
      await scheduleAgentRun(client, options);
      show(await describeAgentSchedule(client, id));
      break;
    }
    case "list":
      for (const s of await listAgentSchedules(client)) show(s);
      break;
    case "describe":
      show(await describeAgentSchedule(client, id));
      break;
    case "pause":
    case "unpause":
    case "trigger":
    case "delete": {
      const act = {
        pause: pauseAgentSchedule,
        unpause: unpauseAgentSchedule,
        trigger: triggerAgentSchedule,
        delete: deleteAgentSchedule,
      }[command];
      await act(client, id);
      console.log(
        `${id} ${{ pause: "paused", unpause: "unpaused", trigger: "triggered", delete: "deleted" }[command]}`,
      );
      break;
    }
    default:
      fail(`unknown command "${command}"`);
  }
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  // Bad options (they name the field, e.g. `Invalid schedule: "spec.cron" ...`): nothing was created.
  if (err instanceof InvalidRunInputError) console.error(USAGE);
  process.exitCode = err instanceof InvalidRunInputError ? 2 : 1;
} finally {
  await connection.close();
}
