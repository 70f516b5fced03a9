/**
 * A worker in its own process, for the crash tests: `kill -9` must hit a real
 * process. Configured by environment; prints "ready" once it polls.
 */
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import { createAgentWorker } from "../../src/worker.js";
import { crashTools, logLine, registerScriptedModel } from "./scenario.js";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

Runtime.install({ logger: new DefaultLogger("ERROR") });
const logFile = env("CRASH_LOG");
const model = registerScriptedModel(env("CRASH_VARIANT") as "main" | "non-idempotent", logFile);
const connection = await NativeConnection.connect({ address: env("TEMPORAL_ADDRESS") });
let turns = 0;
let announce = false;
const worker = await createAgentWorker({
  connection,
  taskQueue: env("CRASH_TASK_QUEUE"),
  tools: crashTools(logFile),
  models: [model],
  workflowBundle: { codePath: env("CRASH_BUNDLE") },
  onEvent: (event) => {
    if (event.type === "message_start" && event.message.role === "assistant") announce = true;
    if (announce && event.type === "message_update" && event.assistantEvent.type === "text_delta") {
      announce = false;
      logLine(logFile, { event: "streaming" });
    }
    if (event.type === "turn_end") logLine(logFile, { event: "turn_end", turn: ++turns });
  },
});
process.stdout.write("ready\n");
await worker.run();
