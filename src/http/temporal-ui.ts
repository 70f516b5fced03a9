/** Where the console links a run's history: a configured Temporal UI, else the `npm run temporal` dev server's. */
import { readServerState } from "../cli/server-state.js";

/**
 * The Web UI of the dev server `npm run temporal` keeps running (its state file, `.jai/server.json` in the
 * working folder), when `address` is that server's: so `npm run serve` next to it links runs with no setting.
 */
export function devServerUiUrl(address: string | undefined, cwd = process.cwd()): string | undefined {
  if (!address) return undefined;
  const state = readServerState(cwd);
  return state?.address === address && typeof state.uiUrl === "string" ? state.uiUrl : undefined;
}
