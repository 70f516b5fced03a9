/** Where `npm run temporal` leaves its address so `npm start` can find it; both use one SQLite file. */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { stateDir, waitForServer } from "./dev-server.js";

export interface ServerState {
  address: string;
  uiUrl?: string;
  pid?: number;
}

export const dbFile = () => path.join(stateDir(), "temporal.db");
const stateFile = () => path.join(stateDir(), "server.json");

export function writeServerState(state: ServerState): void {
  writeFileSync(stateFile(), JSON.stringify(state, null, 2));
}

export function clearServerState(): void {
  rmSync(stateFile(), { force: true });
}

/**
 * What `npm run temporal` last wrote in `cwd`, without asking the server and without creating `.jai` (a reader
 * may run in a read-only folder, e.g. the image's).
 */
export function readServerState(cwd = process.cwd()): ServerState | undefined {
  const file = path.join(cwd, ".jai", "server.json");
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as ServerState;
  } catch {
    return undefined;
  }
}

/** The server `npm run temporal` keeps running, if it still answers. */
export async function runningServer(): Promise<ServerState | undefined> {
  const state = readServerState();
  if (!state) return undefined;
  try {
    await waitForServer(state.address, 2000);
    return state;
  } catch {
    return undefined;
  }
}
