/**
 * `jai-agent bundle [file] [--encrypt-failures]`: bundles the agent workflows once (the image does it at build time) so
 * workers start in seconds. `--encrypt-failures` for workers with a payload codec (JAI_CODEC_KEYS): their workflows'
 * failure messages and stack traces go through it too.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseCli, runCli, UsageError } from "./program.js";

const USAGE = `usage: jai-agent bundle [file] [--encrypt-failures]
  prebuilds the workflow bundle (default dist/workflow-bundle.js, beside the built code) so workers start in seconds
  --encrypt-failures   for workers with a payload codec (JAI_CODEC_KEYS): failure messages go through it too`;

async function main(): Promise<number> {
  const { values, positionals } = parseCli(process.argv.slice(2), { "encrypt-failures": { type: "boolean" } });
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
  const out = path.resolve(positionals[0] ?? fileURLToPath(new URL("../workflow-bundle.js", import.meta.url)));
  const { bundleAgentWorkflows } = await import("../worker/worker.js"); // after the arguments: --help answers at once
  const { code } = await bundleAgentWorkflows(undefined, { encryptFailures: values["encrypt-failures"] === true });
  writeFileSync(out, code);
  console.log(`workflow bundle: ${out} (${(code.length / 1024).toFixed(0)} KB)`);
  return 0;
}

runCli(USAGE, main);
