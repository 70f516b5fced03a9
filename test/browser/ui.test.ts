/**
 * The Temporal UI as an operator sees it (headless Chromium): the list shows
 * each run's summary and its agent status, failed runs are Failed, and the
 * saved view on `AgentStatus = "waiting_for_approval"` lists exactly the runs
 * the visibility API returns for the same query. Its own dev server with the UI.
 */
import { afterAll, beforeAll, expect, it } from "@jest/globals";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, Connection } from "@temporalio/client";
import { NativeConnection } from "@temporalio/worker";
import { startDevServer, type DevServer } from "../../src/node/dev-server.js";
import { WAITING_FOR_APPROVAL_QUERY } from "../../src/shared/search-attributes.js";
import { captureWorkflowList, SAVED_VIEW } from "../../scripts/ui-screenshot.js";
import { startUiRuns, UI_PROMPTS, type UiRuns } from "../../scripts/ui-runs.js";
import { openTestEnv, type TestEnv } from "../support/helpers.js";
import { connectTestClient } from "../support/client-connection.js";

let env: TestEnv;
let server: DevServer;
let connection: Connection;
let native: NativeConnection;
let runs: UiRuns | undefined;
const dir = mkdtempSync(path.join(os.tmpdir(), "jai-ui-"));
beforeAll(async () => {
  env = await openTestEnv(); // installs the runtime's logger
  server = await startDevServer({});
  connection = await connectTestClient(server.address);
  native = await NativeConnection.connect({ address: server.address });
}, 120000);
afterAll(async () => {
  await runs?.stop();
  await native?.close();
  await connection?.close();
  await server?.stop();
  await env?.close();
  rmSync(dir, { recursive: true, force: true });
});

const firstLine = (prompt: string) => prompt.split("\n")[0];

it("lists runs with their summaries and statuses; the saved view shows what the visibility query returns", async () => {
  const client = new Client({ connection });
  runs = await startUiRuns(client, native, "ui-test", env.bundle);
  const capture = await captureWorkflowList(server.uiUrl!, dir, Object.keys(UI_PROMPTS).length, 2);

  for (const prompt of Object.values(UI_PROMPTS)) expect(capture.listText).toContain(firstLine(prompt));
  // The two runs whose model failed are Failed (Temporal's status), with AgentStatus "failed".
  expect(capture.listText.match(/\bFailed\b/g)).toHaveLength(2);
  expect(capture.listText.match(/\tfailed\t/g)).toHaveLength(2);
  expect(capture.listText).toMatch(/waiting_for_approval/);

  // The saved view is there, and shows exactly the runs the visibility API returns for its query.
  expect(capture.savedViews).toContain(SAVED_VIEW);
  const ids: string[] = [];
  for await (const w of client.workflow.list({ query: WAITING_FOR_APPROVAL_QUERY })) ids.push(w.workflowId);
  expect(ids.sort()).toEqual([runs.handles.waiting.workflowId, runs.handles.waiting2.workflowId].sort());
  for (const id of ids) expect(capture.viewText).toContain(id);
  for (const key of ["completed", "failed", "failed2", "cancelled"] as const)
    expect(capture.viewText).not.toContain(runs.handles[key].workflowId);
  expect(capture.viewText).toContain(firstLine(UI_PROMPTS.waiting));

  for (const file of ["ui-workflow-list.png", "ui-waiting-for-approval.png"]) {
    expect(readFileSync(path.join(dir, file)).subarray(1, 4).toString()).toBe("PNG");
  }
}, 180000);
