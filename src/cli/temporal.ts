/** `npm run temporal`: a Temporal dev server with its Web UI on the project's SQLite file, until Ctrl-C. */
import { portInUse, startDevServer } from "../dev-server.js";
import { clearServerState, dbFile, runningServer, writeServerState } from "./server-state.js";

const existing = await runningServer();
if (existing) {
  console.log(`A dev server is already running at ${existing.address}; Web UI: ${existing.uiUrl}`);
  process.exit(0);
}

const port = (await portInUse(7233)) ? undefined : 7233;
const uiPort = (await portInUse(8233)) ? undefined : 8233;
console.log("Starting the Temporal dev server...");
const server = await startDevServer({ dbFile: dbFile(), port, uiPort, log: (line) => console.log(line) });
writeServerState({ address: server.address, uiUrl: server.uiUrl, pid: server.pid });
console.log(`Temporal dev server: ${server.address} (namespace "default")`);
console.log(`Web UI:              ${server.uiUrl}`);
console.log(`History is kept in   ${server.dbFile}`);
console.log("Press Ctrl-C to stop.");

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  clearServerState();
  await server.stop();
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
