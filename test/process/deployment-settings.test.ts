/**
 * The worker process's deployment settings (Worker Deployment Versioning), on the jest run's dev server: a worker
 * started with TEMPORAL_DEPLOYMENT_NAME and TEMPORAL_WORKER_BUILD_ID (the names Temporal's Worker Controller sets)
 * polls as that version and its runs are pinned to it; half a setting, or a name the server would refuse, is refused
 * before anything connects. The deploy itself (a second version, sessions moving, the drain): test/server/deploy.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import type { WorkflowHandleWithFirstExecutionRunId } from "@temporalio/client";
import { startAgentRun } from "../../src/client/client.js";
import { runWorkerProcess } from "../../src/worker/process/run.js";
import { buildIdsOf, chainHistories, makeCurrent, versionTaskQueues } from "../support/deploy.js";
import { openTestEnv, uniqueId, within, type TestEnv } from "../support/helpers.js";
import { killAllWorkers, startSourceWorker } from "../support/service/processes.js";

let env: TestEnv;

beforeAll(async () => {
  env = await openTestEnv();
}, 60000);

afterAll(async () => {
  killAllWorkers();
  await env?.close();
});

describe("the worker process's deployment version", () => {
  it("polls as the version its environment names, and pins its runs to it", async () => {
    const name = uniqueId("jai-process");
    const taskQueue = uniqueId("versioned");
    const worker = await startSourceWorker(["--task-queue", taskQueue], {
      TEMPORAL_DEPLOYMENT_NAME: name,
      TEMPORAL_WORKER_BUILD_ID: "build-1",
    });
    try {
      expect(worker.output()).toContain(`deployment: "${name}" build "build-1" (runs pinned to it)`);
      await makeCurrent(env.client, name, "build-1");
      expect(await versionTaskQueues(env.client, name, "build-1")).toEqual([taskQueue]);
      const handle = await startAgentRun(env.client, {
        taskQueue,
        model: "demo/offline-scripted",
        prompt: "What is in the workspace?",
      });
      const result = await within(handle.result(), 60_000, "the demo run");
      expect(result.stopReason).toBe("stop");
      const [run] = await chainHistories(
        env.client,
        handle.workflowId,
        (handle.workflow as WorkflowHandleWithFirstExecutionRunId).firstExecutionRunId,
      );
      expect(buildIdsOf(run.events)).toEqual(["build-1"]);
      const described = await handle.workflow.describe();
      expect(described.raw.workflowExecutionInfo?.versioningInfo?.behavior).toBe(
        // VERSIONING_BEHAVIOR_PINNED
        1,
      );
    } finally {
      expect(await worker.stop()).toBe(0);
    }
  }, 120_000);

  it("refuses half a setting, and a deployment name the server would refuse, before connecting", async () => {
    const run = (argv: string[], vars: Record<string, string>) =>
      runWorkerProcess({ argv, env: { TEMPORAL_ADDRESS: "127.0.0.1:1", ...vars }, log: () => {} });
    await expect(run(["--deployment-name", "jai-agent"], {})).rejects.toThrow(
      "--deployment-name (TEMPORAL_DEPLOYMENT_NAME) and --build-id (TEMPORAL_WORKER_BUILD_ID) go together: the build id is missing",
    );
    await expect(run([], { TEMPORAL_WORKER_BUILD_ID: "build-1" })).rejects.toThrow("the name is missing");
    await expect(run([], { TEMPORAL_DEPLOYMENT_NAME: "jai.agent", TEMPORAL_WORKER_BUILD_ID: "1" })).rejects.toThrow(
      'deployment name must be a non-empty string without "." or ":"',
    );
  });
});
