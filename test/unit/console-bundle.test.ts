/**
 * The console's script and stylesheet (src/http/console/assets.ts): bundled from src/http/console/web by esbuild
 * into one IIFE with the one event deduper (src/shared/event-ids.ts); read from a prebuilt bundle when there is
 * one (an installed package has no esbuild); named by a content hash that changes with the content.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { bundleConsole, loadConsole } from "../../src/http/console/assets.js";

const tmp = mkdtempSync(path.join(os.tmpdir(), "jai-console-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const bundle = bundleConsole();

/** A prebuilt bundle directory holding these files. */
function prebuilt(name: string, files: Record<string, string>) {
  const dir = path.join(tmp, name);
  mkdirSync(dir);
  for (const [file, text] of Object.entries(files)) writeFileSync(path.join(dir, file), text);
  return dir;
}

describe("the console bundle", () => {
  it("is one self-contained script with the shared deduper once, and the stylesheet", () => {
    const script = bundle["app.js"];
    expect(script).not.toMatch(/String\.raw|\brequire\(|^\s*(import|export)\s/m);
    expect(script.match(/var EventDeduper = class/g)).toHaveLength(1);
    expect(script).not.toContain("eventDeduper");
    expect(script).toContain('"/console/settings"');
    expect(bundle["style.css"]).toContain(".runs-table");
  });

  it("is read from a prebuilt bundle when there is one, and bundled from the sources otherwise", () => {
    const files = { "app.js": "/* built */", "style.css": "/* built css */" };
    const built = loadConsole(prebuilt("built", files));
    expect(built.assets.map((a) => [a.path, a.body])).toEqual([
      ["/console/app.js", files["app.js"]],
      ["/console/style.css", files["style.css"]],
    ]);
    // Half a bundle is no bundle.
    const sources = loadConsole(prebuilt("half", { "app.js": "/* half */" }));
    expect(sources.assets.map((a) => a.body)).toEqual([bundle["app.js"], bundle["style.css"]]);
  });

  it("names each file by its content hash, in the shell that loads them", () => {
    const a = loadConsole(prebuilt("a", { "app.js": "one()", "style.css": "a{}" }));
    const b = loadConsole(prebuilt("b", { "app.js": "two()", "style.css": "a{}" }));
    expect(a.assets[0].hash).toMatch(/^[\w-]{16}$/);
    expect(b.assets[0].hash).not.toBe(a.assets[0].hash);
    expect(b.assets[1].hash).toBe(a.assets[1].hash);
    expect(a.shell).toContain(`<script src="/console/app.js?v=${a.assets[0].hash}" defer></script>`);
    expect(a.shell).toContain(`href="/console/style.css?v=${a.assets[1].hash}"`);
    expect(b.shellHash).not.toBe(a.shellHash);
  });

  it("without a bundle or what builds one, says how to make one", () => {
    expect(() => bundleConsole(path.join(tmp, "no-sources"))).toThrow(/npm run build/);
  });
});
