/**
 * A handful of runs in every state an operator meets (completed, failed with a
 * model error, waiting for approval, cancelled), for the Temporal UI
 * screenshot in docs/ (scripts/ui-screenshot.ts) and its test.
 */
import type { Client } from "@temporalio/client";
import type { NativeConnection } from "@temporalio/worker";
import { fauxAssistantMessage, fauxToolCall, registerFauxProvider, Type, type Context } from "@jai/ai";
import { startAgentRun, type AgentRunHandle } from "../src/client/client.js";
import type { AgentTool } from "../src/shared/contracts.js";
import { createAgentWorker, type AgentWorker } from "../src/worker/worker.js";

const tools: AgentTool<any>[] = [
  {
    name: "delete_path",
    description: "Deletes a file or folder",
    parameters: Type.Object({ path: Type.String() }),
    requiresApproval: true,
    async execute(_id, args: { path: string }) {
      return { content: [{ type: "text", text: `deleted ${args.path}` }] };
    },
  },
  {
    name: "read_file",
    description: "Reads a file",
    parameters: Type.Object({ path: Type.String() }),
    async execute(_id, args: { path: string }) {
      return { content: [{ type: "text", text: `contents of ${args.path}` }] };
    },
  },
];

/** The model answers from the context: first prompt words pick the script. */
function answer(context: Context) {
  const first = context.messages.find((m) => m.role === "user");
  const text = typeof first?.content === "string" ? first.content : "";
  const answered = context.messages.some((m) => m.role === "toolResult");
  if (text.startsWith("Refactor") || text.startsWith("Translate")) {
    return fauxAssistantMessage([], {
      stopReason: "error",
      errorMessage: text.startsWith("Refactor") ? "401 invalid x-api-key" : "invalid x-api-key: key revoked",
    });
  }
  if (text.startsWith("Clean up") && !answered)
    return fauxAssistantMessage([fauxToolCall("delete_path", { path: "/srv/app/build" })], { stopReason: "toolUse" });
  if (text.startsWith("Draft") && !answered)
    return fauxAssistantMessage([fauxToolCall("delete_path", { path: "notes/draft-0.2.md" })], {
      stopReason: "toolUse",
    });
  if (text.startsWith("Remove") && !answered)
    return fauxAssistantMessage([fauxToolCall("delete_path", { path: "/var/log/app/2025-*.log" })], {
      stopReason: "toolUse",
    });
  if (text.startsWith("Summarise") && !answered)
    return fauxAssistantMessage([fauxToolCall("read_file", { path: "README.md" })], { stopReason: "toolUse" });
  return fauxAssistantMessage(
    "Done: the README explains the durable agent loop, how to start a run and how to watch it.",
  );
}

export const UI_PROMPTS = {
  completed: "Summarise the README for a new contributor\nKeep it under 200 words.",
  failed: "Refactor the billing module to use the new tax API\nRun the tests afterwards.",
  failed2: "Translate docs/benchmarks.md into German",
  waiting: "Clean up the build folder before the release",
  waiting2: "Remove last year's log files from the app server",
  cancelled: "Draft the release notes for 0.2",
};

export interface UiRuns {
  worker: AgentWorker;
  handles: Record<keyof typeof UI_PROMPTS, AgentRunHandle>;
  /** Resolves once every run is settled where the screenshot wants it; the worker keeps running until `stop()`. */
  stop(): Promise<void>;
}

/** Starts a worker on `taskQueue` and the runs; returns once the waiting ones wait and the others have ended. */
export async function startUiRuns(
  client: Client,
  connection: NativeConnection,
  taskQueue: string,
  workflowBundle?: { code: string },
): Promise<UiRuns> {
  const faux = registerFauxProvider({ provider: "acme", api: "acme-scripted", models: [{ id: "coder-large" }] });
  faux.setResponses(Array.from({ length: 100 }, () => answer));
  const worker = await createAgentWorker({
    connection,
    taskQueue,
    tools,
    models: [faux.getModel()],
    ...(workflowBundle ? { workflowBundle } : {}),
  });
  const running = worker.run();
  const start = (key: keyof typeof UI_PROMPTS) =>
    startAgentRun(client, {
      taskQueue,
      workflowId: `ui-${key}-${taskQueue.slice(-6)}`,
      model: "acme/coder-large",
      prompt: UI_PROMPTS[key],
    });
  const handles = {} as Record<keyof typeof UI_PROMPTS, AgentRunHandle>;
  for (const key of ["completed", "failed", "waiting", "failed2", "cancelled", "waiting2"] as const)
    handles[key] = await start(key);
  await Promise.all([handles.completed.result(), handles.failed.result(), handles.failed2.result()]);
  for (const key of ["waiting", "waiting2", "cancelled"] as const) {
    for (;;) {
      if ((await handles[key].state()).status === "waiting_for_approval") break;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  await handles.cancelled.cancel();
  await handles.cancelled.result();
  return {
    worker,
    handles,
    async stop() {
      for (const key of ["waiting", "waiting2"] as const)
        await handles[key].workflow.terminate("screenshot taken").catch(() => {});
      worker.shutdown();
      await running;
    },
  };
}
