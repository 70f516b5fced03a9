// One real Temporal dev server for the whole jest run; tests read TEMPORAL_ADDRESS. A folder for the run's shared
// workflow bundles (test/support/bundles.ts): JAI_TEST_BUNDLES.
// Plain ESM: jest loads global setup outside its transform, so tsx loads the TypeScript launcher.
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { tsImport } from "tsx/esm/api";

export default async function globalSetup() {
  const { startDevServer } = await tsImport("../../src/dev-server.ts", import.meta.url);
  const server = await startDevServer({ uiPort: false, log: (line) => console.log(line) });
  process.env.TEMPORAL_ADDRESS = server.address;
  globalThis.__temporalDevServer = server;
  process.env.JAI_TEST_BUNDLES = mkdtempSync(path.join(os.tmpdir(), "jai-test-bundles-"));
}
