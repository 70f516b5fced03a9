// One real Temporal dev server for the whole jest run; tests read TEMPORAL_ADDRESS.
// Plain ESM: jest loads global setup outside its transform, so tsx loads the TypeScript launcher.
import { tsImport } from "tsx/esm/api";

export default async function globalSetup() {
  const { startDevServer } = await tsImport("../../src/dev-server.ts", import.meta.url);
  const server = await startDevServer({ uiPort: false, log: (line) => console.log(line) });
  process.env.TEMPORAL_ADDRESS = server.address;
  globalThis.__temporalDevServer = server;
}
