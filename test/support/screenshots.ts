/**
 * Where the browser tests write their screenshots: the folder JAI_SCREENSHOTS names, else a folder under the
 * system's temp directory. Never the tracked images in docs/ unless asked: `JAI_SCREENSHOTS=docs` retakes them
 * (docs/testing.md), so `npm test` leaves a clone's files as they were.
 */
import { mkdirSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** The folder screenshots go to (created), relative names from the repository's root. */
export function screenshotDir(env: NodeJS.ProcessEnv = process.env): string {
  const asked = env.JAI_SCREENSHOTS?.trim();
  const dir = asked ? path.resolve(repoRoot, asked) : path.join(os.tmpdir(), "jai-screenshots");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The file a screenshot named `name` (e.g. "console-run.png") is written to. */
export function screenshotPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return path.join(screenshotDir(env), name);
}
