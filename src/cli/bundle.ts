/**
 * `jai-agent bundle [file] [--encrypt-failures]`: bundles the agent workflows once (the image does it at build time) so
 * workers start in seconds. `--encrypt-failures` for workers with a payload codec (JAI_CODEC_KEYS): their workflows'
 * failure messages and stack traces go through it too.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { bundleAgentWorkflows } from "../worker.js";

const args = process.argv.slice(2);
const encryptFailures = args.includes("--encrypt-failures");
const file = args.find((a) => !a.startsWith("--"));
const out = path.resolve(file ?? fileURLToPath(new URL("../workflow-bundle.js", import.meta.url)));
const { code } = await bundleAgentWorkflows(undefined, { encryptFailures });
writeFileSync(out, code);
console.log(`workflow bundle: ${out} (${(code.length / 1024).toFixed(0)} KB)`);
