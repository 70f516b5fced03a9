/// <reference lib="dom" />
/**
 * Screenshots of the Temporal UI's workflow list as an operator sets it up:
 * the agent's search attributes as columns, and a saved view of the runs
 * waiting for approval (`AgentStatus = "waiting_for_approval"`). Headless
 * Chromium (Debian's `chromium` package) through playwright-core.
 *
 * `npm run screenshot` starts a dev server with its UI, the runs of
 * scripts/ui-runs.ts, and writes docs/ui-workflow-list.png and
 * docs/ui-waiting-for-approval.png. test/browser/ui.test.ts runs the same steps.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { launchChromium } from "./chromium.js";
import { WAITING_FOR_APPROVAL_QUERY } from "../src/shared/search-attributes.js";

export { CHROMIUM } from "./chromium.js";

/** Columns the list shows, after Status and Workflow ID. */
const COLUMNS = ["AgentSummary", "AgentStatus", "AgentStopReason", "AgentModel", "AgentTotalTokens"];
export const SAVED_VIEW = "Waiting for approval";

export interface Capture {
  /** The list's text (all runs), as rendered. */
  listText: string;
  /** The saved view's text. */
  viewText: string;
  /** The saved view's name as the side bar shows it. */
  savedViews: string;
}

async function settle(page: Page, rows: number): Promise<void> {
  await page.waitForFunction((n) => document.querySelectorAll("tbody tr").length >= n, rows, { timeout: 30000 });
  await page.waitForLoadState("networkidle");
}

/** Sets up the list and the saved view in the UI at `uiUrl`, writing the screenshots into `outDir`. */
export async function captureWorkflowList(
  uiUrl: string,
  outDir: string,
  expectedRuns: number,
  waitingRuns: number,
): Promise<Capture> {
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1900, height: 600 } });
    await page.goto(`${uiUrl}/namespaces/default/workflows`);
    await settle(page, expectedRuns);

    await page.click('[data-testid="workflows-summary-table-configuration-button"]');
    for (const column of ["Run ID", "Type", "End"])
      await page.click(`[data-testid="orderable-list-item-${column}-remove-button"]`);
    for (const column of COLUMNS) await page.click(`[data-testid="orderable-list-item-${column}-add-button"]`);
    const drawer = page
      .locator("aside, [role=dialog], .drawer")
      .filter({ hasText: "Configure Workflows Table" })
      .first();
    await drawer.getByRole("button", { name: /close/i }).first().click();
    await page.waitForFunction(
      (name) => Array.from(document.querySelectorAll("thead th")).some((th) => th.textContent?.includes(name)),
      "AgentSummary",
    );
    await page.getByText("Configure Workflows Table").waitFor({ state: "hidden" });
    await page.screenshot({ path: path.join(outDir, "ui-workflow-list.png") });
    const listText = await page.innerText("table");

    await page.goto(`${uiUrl}/namespaces/default/workflows?query=${encodeURIComponent(WAITING_FOR_APPROVAL_QUERY)}`);
    await settle(page, waitingRuns);
    await page.click('[data-testid="create-view-button"]');
    const name = page.locator('[role="dialog"] input[type="text"], dialog[open] input').first();
    await name.fill(SAVED_VIEW);
    await page.locator('[data-testid="confirm-modal-button"]:visible').click();
    await page.waitForFunction((view) => document.body.innerText.includes(view), SAVED_VIEW);
    await page.waitForFunction((n) => document.querySelectorAll("tbody tr").length === n, waitingRuns, {
      timeout: 30000,
    });
    await page.screenshot({ path: path.join(outDir, "ui-waiting-for-approval.png") });
    return { listText, viewText: await page.innerText("table"), savedViews: await page.innerText("body") };
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const { Client, Connection } = await import("@temporalio/client");
  const { DefaultLogger, NativeConnection, Runtime } = await import("@temporalio/worker");
  const { startDevServer } = await import("../src/node/dev-server.js");
  const { startUiRuns } = await import("./ui-runs.js");
  Runtime.install({ logger: new DefaultLogger("WARN") });
  const server = await startDevServer({ log: console.log });
  const connection = await Connection.connect({ address: server.address });
  const native = await NativeConnection.connect({ address: server.address });
  try {
    const runs = await startUiRuns(new Client({ connection }), native, "jai-agent-ui");
    try {
      const docs = fileURLToPath(new URL("../docs/", import.meta.url));
      await captureWorkflowList(server.uiUrl!, docs, Object.keys(runs.handles).length, 2);
      console.log(`wrote ${path.join(docs, "ui-workflow-list.png")} and ui-waiting-for-approval.png`);
    } finally {
      await runs.stop();
    }
  } finally {
    await native.close();
    await connection.close();
    await server.stop();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
