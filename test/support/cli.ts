/** Running the project's CLIs (and other programs) from a test, without blocking the test's own workers. */
import { execFile } from "node:child_process";
import path from "node:path";
import { repoRoot } from "./service/processes.js";
import { nodeEntry } from "./entry.js";

export interface ProgramOutput {
  /** The exit code; null when the program was killed (e.g. by the 2-minute timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `file` in the repository with this process's environment less `NODE_OPTIONS` (jest's VM flag) and
 * `JAI_CODEC_KEYS`, plus `extraEnv` (a variable set to undefined or "" is removed). Asynchronous on purpose: a
 * test's in-process workers must keep serving the runs the program acts on.
 */
export function runProgram(
  file: string,
  args: string[],
  extraEnv: Record<string, string | undefined> = {},
): Promise<ProgramOutput> {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: "", JAI_CODEC_KEYS: "", ...extraEnv };
  for (const [k, v] of Object.entries(env)) if (v === undefined || v === "") delete env[k];
  return new Promise((resolve) => {
    execFile(file, args, { cwd: repoRoot, env, timeout: 120_000 }, (err, stdout, stderr) =>
      resolve({
        code: err ? (typeof err.code === "number" ? err.code : null) : 0,
        stdout: String(stdout),
        stderr: String(stderr),
      }),
    );
  });
}

/** `jai-agent <args>` from the sources (test/support/entry.ts), as the installed bin runs it; the server from TEMPORAL_ADDRESS. */
export const jaiAgent = (args: string[], extraEnv: Record<string, string | undefined> = {}) =>
  runProgram(process.execPath, [...nodeEntry(path.join(repoRoot, "src/cli/jai-agent.ts")), ...args], extraEnv);
