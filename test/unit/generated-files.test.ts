/**
 * Generated files go where the run names (issue 57 row 10): the browser tests' screenshots into a temp folder
 * (docs/ only with JAI_SCREENSHOTS=docs), the soak's report beside its run's summary (docs/soak.md only with
 * `--report docs/soak.md`), so a clone is as clean after `npm test` or `npm run soak` as before.
 */
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "@jest/globals";
import { screenshotPath } from "../support/screenshots.js";
import { soakReportFile } from "../../scripts/soak/report.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const docs = path.join(repoRoot, "docs");
const inside = (dir: string, file: string) => !path.relative(dir, file).startsWith("..");

describe("generated files", () => {
  it("screenshots go to a temp folder unless JAI_SCREENSHOTS names one", () => {
    const shot = screenshotPath("console-run.png", {});
    expect(inside(os.tmpdir(), shot)).toBe(true);
    expect(inside(repoRoot, shot)).toBe(false);
    expect(screenshotPath("console-run.png", { JAI_SCREENSHOTS: "docs" })).toBe(path.join(docs, "console-run.png"));
  });

  it("no browser test writes a screenshot into docs/ by itself", () => {
    const dir = path.join(repoRoot, "test", "browser");
    for (const file of readdirSync(dir).filter((f) => f.endsWith(".ts"))) {
      const source = readFileSync(path.join(dir, file), "utf8");
      // A path into docs/ handed to page.screenshot, literally or through a variable built from "docs".
      expect({ file, docsPath: /screenshot\(\{\s*path:\s*["'`]docs\//.test(source) }).toEqual({
        file,
        docsPath: false,
      });
      expect({ file, docsDir: /["'`](\.\.\/)*docs["'`]\s*\)/.test(source) }).toEqual({ file, docsDir: false });
    }
  });

  it("the soak's report goes beside its summary unless --report names a file", () => {
    const out = path.join(os.tmpdir(), "soak-run");
    expect(soakReportFile(undefined, out)).toBe(path.join(out, "report.md"));
    expect(soakReportFile("none", out)).toBeUndefined();
    expect(soakReportFile("docs/soak.md", out)).toBe(path.resolve("docs/soak.md"));
    // scripts/soak.ts runs as a program (it starts a cluster when imported): its --report option has no default of its own.
    const soak = readFileSync(path.join(repoRoot, "scripts", "soak.ts"), "utf8");
    expect(soak).not.toMatch(/"docs",\s*"soak\.md"/);
    expect(soak).toMatch(/soakReportFile\(opts\.report, out\)/);
  });
});
