/** `jai-agent bundle [file]`: bundles the agent workflows once (the image does it at build time) so workers start in seconds. */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { bundleAgentWorkflows } from "../worker.js";

const out = path.resolve(process.argv[2] ?? fileURLToPath(new URL("../workflow-bundle.js", import.meta.url)));
const { code } = await bundleAgentWorkflows();
writeFileSync(out, code);
console.log(`workflow bundle: ${out} (${(code.length / 1024).toFixed(0)} KB)`);
