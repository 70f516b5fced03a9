/**
 * How a test starts one of the repository's TypeScript programs (a CLI, a worker process, a child fixture) in a
 * new Node process: its arguments to `node`. Jest's global setup compiles the sources once per run
 * (test/support/compile-sources.js, into JAI_TEST_JS) with the compiler tsx would run on every import; started
 * from there, a program skips tsx's loader (~0.8 s of CPU a process, and a suite starts hundreds). Without that
 * folder (a file run some other way) the program runs through tsx, as `npm run` runs it. The code is the same:
 * built from the sources as they are when the run starts.
 */
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Not processes.ts' repoRoot: that file starts programs through this one.
const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** `node` arguments that run `file` (a .ts path, absolute or from the repository's root). */
export function nodeEntry(file: string): string[] {
  const source = path.resolve(repoRoot, file);
  const compiled = process.env.JAI_TEST_JS;
  if (compiled) {
    const js = path.join(compiled, path.relative(repoRoot, source)).replace(/\.ts$/, ".js");
    if (existsSync(js)) return [js];
  }
  return ["--import", "tsx", source];
}
