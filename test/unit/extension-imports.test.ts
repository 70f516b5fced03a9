/**
 * Optional features plug in through one seam (src/extension.ts) and import nothing from the loop's folders: the
 * core must read the same with them removed, and an extension must not reach into the loop's internals.
 */
import { describe, expect, it } from "@jest/globals";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const src = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src");
/** The folders of optional features that plug in through the seam. */
const EXTENSIONS = ["failover"];
/** The loop's folders. */
const LOOP = ["workflows", "activities"].map((d) => path.join(src, d) + path.sep);

/** Every module specifier a source file imports or re-exports (static, dynamic and type-only). */
function specifiers(text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(?:^|[\s;])(?:import|export)\b[^"'`]*?\bfrom\s*["']([^"']+)["']/g)) found.push(m[1]);
  for (const m of text.matchAll(/\bimport\s*\(\s*["']([^"']+)["']\s*\)/g)) found.push(m[1]);
  for (const m of text.matchAll(/^\s*import\s*["']([^"']+)["']/gm)) found.push(m[1]);
  return found;
}

/** The imports of `file` (its text) that land in a loop folder. */
function loopImports(file: string, text: string): string[] {
  return specifiers(text)
    .filter((s) => s.startsWith("."))
    .filter((s) => LOOP.some((dir) => path.resolve(path.dirname(file), s).startsWith(dir)))
    .map((s) => `${path.relative(src, file)} imports ${s}`);
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : /\.[cm]?ts$/.test(e.name) ? [path.join(dir, e.name)] : [],
  );
}

describe("optional features import nothing from the loop's folders", () => {
  it.each(EXTENSIONS)("src/%s", (name) => {
    const files = sources(path.join(src, name));
    expect(files.length).toBeGreaterThan(0);
    expect(files.flatMap((f) => loopImports(f, readFileSync(f, "utf8")))).toEqual([]);
  });

  it("the check sees every kind of import into the loop", () => {
    const file = path.join(src, "failover", "x.ts");
    const text = [
      'export * from "../workflows/index.js";',
      'import type { A } from "../activities/model.js";',
      "import {\n  B,\n  C,\n} from '../workflows/run-state.js';",
      'const d = await import("../workflows/input.js");',
      'import "../activities/index.js";',
      'import { ok } from "../extension.js";',
      'import { alsoOk } from "./links.js";',
    ].join("\n");
    expect(loopImports(file, text)).toHaveLength(5);
  });
});
