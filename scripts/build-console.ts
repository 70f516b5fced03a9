/**
 * `npm run build`'s last step: the console's script and stylesheet, bundled once (src/http/console/assets.ts,
 * `bundleConsole`) into dist/http/console/bundle/, where the compiled server reads them: an installed package
 * has no esbuild. `tsx scripts/build-console.ts [dir]` writes them elsewhere.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { bundleConsole } from "../src/http/console/assets.js";

const dir = path.resolve(process.argv[2] ?? fileURLToPath(new URL("../dist/http/console/bundle", import.meta.url)));
mkdirSync(dir, { recursive: true });
for (const [name, text] of Object.entries(bundleConsole())) writeFileSync(path.join(dir, name), text);
console.log(`console bundle: ${dir}`);
