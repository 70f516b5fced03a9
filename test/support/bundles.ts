/**
 * Workflow bundles shared by every test file of one jest run. Building one costs ~6 s of CPU (webpack); with a
 * bundle per test file that was minutes of a 2-core suite. Jest's global setup makes a folder for the run
 * (`JAI_TEST_BUNDLES`); the first file that asks for a kind builds it there, later files read it. Built from the
 * sources as they are when the run asks, so a run never serves a stale bundle. Without the folder (a file run
 * some other way) each call builds its own.
 */
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, open, rename, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomUUID } from "node:crypto";
import { bundleAgentWorkflows } from "../../src/worker/worker.js";

/** The bundles tests use: the loop alone, with encrypted failures, with tracing. */
export type BundleKind = "default" | "encrypted-failures" | "tracing";

const build = (kind: BundleKind) =>
  bundleAgentWorkflows(undefined, {
    encryptFailures: kind === "encrypted-failures",
    tracing: kind === "tracing",
  });

/** A file holding the bundle of `kind`, for worker processes (`workflowBundle: { codePath }`). */
export async function sharedBundleFile(kind: BundleKind = "default"): Promise<string> {
  const dir = process.env.JAI_TEST_BUNDLES || (await mkdtemp(path.join(os.tmpdir(), "jai-bundle-")));
  const file = path.join(dir, `${kind}.js`);
  if (existsSync(file)) return file;
  // The files jest starts together often want the same kind first: one builds it (it made the lock file), the
  // others wait for it, and build their own only if it never comes.
  const builder = await open(`${file}.lock`, "wx").then(
    (lock) => lock.close().then(() => true),
    () => false,
  );
  if (!builder && (await appears(file, 60000))) return file;
  // Written aside and renamed into place (atomic): a reader never sees half a bundle.
  const tmp = `${file}.${randomUUID()}.tmp`;
  await writeFile(tmp, (await build(kind)).code);
  await rename(tmp, file);
  return file;
}

async function appears(file: string, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100)))
    if (existsSync(file)) return true;
  return false;
}

/** The bundle of `kind` as code, for in-process workers (`workflowBundle: { code }`). */
export async function sharedBundle(kind: BundleKind = "default"): Promise<{ code: string }> {
  return { code: readFileSync(await sharedBundleFile(kind), "utf8") };
}
