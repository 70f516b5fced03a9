/**
 * A worker in its own process, for the crash tests: `kill -9` must hit a real
 * process. Configured by environment; prints "ready" once it polls.
 */
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import { createAgentWorker } from "../../../src/worker/worker.js";
import { blobStorageFromEnv } from "../../../src/node/blobs/config.js";
import { crashTools, logLine, registerScriptedModel, type Variant } from "./scenario.js";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

Runtime.install({ logger: new DefaultLogger("ERROR") });
const logFile = env("CRASH_LOG");
const tag = process.env.CRASH_TAG ? ` [${process.env.CRASH_TAG}]` : "";
const model = registerScriptedModel(
  env("CRASH_VARIANT") as Variant,
  logFile,
  Number(process.env.CRASH_TOKENS_PER_SECOND || 60),
  tag,
);
const connection = await NativeConnection.connect({ address: env("TEMPORAL_ADDRESS") });
let turns = 0;
let announce = false;
const worker = await createAgentWorker({
  connection,
  taskQueue: env("CRASH_TASK_QUEUE"),
  tools: crashTools(logFile, Number(process.env.CRASH_SLOW_MS || 3000), tag, process.env.CRASH_LOCAL_TOOLS === "1"),
  models: [model],
  workflowBundle: { codePath: env("CRASH_BUNDLE") },
  // JAI_BLOB_STORE (the harness's `blobStore`): payloads over JAI_BLOB_THRESHOLD go to the store.
  ...(process.env.JAI_BLOB_STORE ? { dataConverter: { externalStorage: blobStorageFromEnv() } } : {}),
  ...(process.env.CRASH_STICKY_TIMEOUT
    ? { workerOptions: { stickyQueueScheduleToStartTimeout: process.env.CRASH_STICKY_TIMEOUT } }
    : {}),
  onEvent: (event) => {
    if (event.type === "message_start" && event.message.role === "assistant") announce = true;
    if (announce && event.type === "message_update" && event.assistantEvent.type === "text_delta") {
      announce = false;
      logLine(logFile, { event: "streaming" });
    }
    if (event.type === "turn_end") logLine(logFile, { event: "turn_end", turn: ++turns });
  },
});
process.stdout.write(`ready ${worker.ownTaskQueue ?? ""}\n`);
await worker.run();
