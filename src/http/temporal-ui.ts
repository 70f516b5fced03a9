/** Where the console links a run's history: a configured Temporal UI, else the `npm run temporal` dev server's. */
import { readFileSync } from "node:fs";
import path from "node:path";

/**
 * The Web UI of the dev server `npm run temporal` keeps running (its state file, `.jai/server.json` in the
 * working folder), when `address` is that server's: so `npm run serve` next to it links runs with no setting.
 */
export function devServerUiUrl(address: string | undefined, cwd = process.cwd()): string | undefined {
  if (!address) return undefined;
  try {
    const state = JSON.parse(readFileSync(path.join(cwd, ".jai", "server.json"), "utf8")) as {
      address?: string;
      uiUrl?: string;
    };
    return state.address === address && typeof state.uiUrl === "string" ? state.uiUrl : undefined;
  } catch {
    return undefined; // no dev server state here
  }
}
