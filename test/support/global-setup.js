// One real Temporal dev server for the whole jest run; tests read TEMPORAL_ADDRESS. A folder for the run's shared
// workflow bundles (test/support/bundles.ts): JAI_TEST_BUNDLES.
// Plain ESM: jest loads global setup outside its transform, so tsx loads the TypeScript launcher.
import { mkdirSync, mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { tsImport } from "tsx/esm/api";
import { compileSources } from "./compile-sources.js";

export default async function globalSetup() {
  const { startDevServer } = await tsImport("../../src/node/dev-server.ts", import.meta.url);
  // A throwaway server: commits need not wait for the disk (WAL survives the server's own crash).
  const server = await startDevServer({
    uiPort: false,
    log: (line) => console.log(line),
    sqlitePragmas: { journal_mode: "wal", synchronous: "off" },
  });
  process.env.TEMPORAL_ADDRESS = server.address;
  // Run servers announce no runtime files (one machine, no setup: src/node/runtime-files.ts): a test follows runs
  // from where it says; test/server/events-one-machine.test.ts turns them on for itself.
  process.env.JAI_RUNTIME_DIR = "off";
  globalThis.__temporalDevServer = server;
  process.env.JAI_TEST_BUNDLES = mkdtempSync(path.join(os.tmpdir(), "jai-test-bundles-"));
  // The sources compiled once for the programs tests start (test/support/entry.ts); inside the repository, so
  // node_modules resolve. Removed by the teardown.
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
  mkdirSync(path.join(root, ".jai"), { recursive: true });
  process.env.JAI_TEST_JS = mkdtempSync(path.join(root, ".jai", "test-js-"));
  await compileSources(root, process.env.JAI_TEST_JS);
}
