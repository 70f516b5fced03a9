// Compiles the repository's TypeScript (src, test/support, test/fixtures) once per jest run into a folder inside
// the repository (so node_modules resolve), for the programs tests start in child processes (test/support/entry.ts).
// esbuild is the compiler tsx runs on every import; run ahead of time, a child skips tsx's loader, which costs
// ~0.8 s of CPU per process (a suite starts hundreds). Types are checked by `npm run typecheck`, not here.
// Plain ESM: jest's global setup loads it outside its transform.
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";

const FOLDERS = ["src", "test/support", "test/fixtures"];

function sources(root, ext) {
  return FOLDERS.flatMap((folder) =>
    readdirSync(path.join(root, folder), { recursive: true })
      .map(String)
      .filter((file) => file.endsWith(ext) && !file.endsWith(".d.ts"))
      .map((file) => path.join(root, folder, file)),
  );
}

/** Compiles into `out` (a fresh folder under `root`), mirroring the layout: `src/cli/x.ts` → `out/src/cli/x.js`. */
export async function compileSources(root, out) {
  const common = { outbase: root, outdir: out, platform: "node", target: "node20", logLevel: "warning" };
  await build({ ...common, entryPoints: sources(root, ".ts"), format: "esm" });
  // Temporal require()s the failure converter by path: CommonJS, as tsc builds it for dist.
  await build({ ...common, entryPoints: sources(root, ".cts"), format: "cjs", outExtension: { ".js": ".cjs" } });
  // The console's script and stylesheet, where the compiled server reads a prebuilt bundle (as dist's, npm run build).
  const consoleDir = path.join(out, "src", "http", "console");
  const { bundleConsole } = await import(pathToFileURL(path.join(consoleDir, "assets.js")).href);
  mkdirSync(path.join(consoleDir, "bundle"));
  const bundle = bundleConsole(path.join(root, "src", "http", "console", "web"));
  for (const [name, text] of Object.entries(bundle)) writeFileSync(path.join(consoleDir, "bundle", name), text);
}
