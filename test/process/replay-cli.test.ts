/**
 * `npm run replay` tells "nothing to judge" (exit 2, naming the file or
 * workflow and why) apart from a divergence (exit 1) and a clean replay (exit 0):
 * issue 9, row 9.
 */
import { describe, expect, it } from "@jest/globals";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { nodeEntry } from "../support/entry.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixture = path.join(root, "test/fixtures/histories/text-only.json");
const dir = mkdtempSync(path.join(os.tmpdir(), "replay-cli-"));

function replay(args: string[]) {
  const run = spawnSync(process.execPath, [...nodeEntry(path.join(root, "src/cli/replay.ts")), ...args], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: "" },
    encoding: "utf8",
    timeout: 120000,
  });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

function write(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

describe("npm run replay: inputs that are not an agent run's history exit 2", () => {
  it("another workflow type's history: exit 2 naming the file and the type, never 'deterministic'", () => {
    const json = JSON.parse(readFileSync(fixture, "utf8"));
    json.events[0].workflowExecutionStartedEventAttributes.workflowType.name = "orderWorkflow";
    const file = write("other-type.json", JSON.stringify(json));
    const out = replay(["--file", file]);
    expect(out.code).toBe(2);
    expect(out.stdout).not.toMatch(/deterministic/);
    expect(out.stderr).toContain(file);
    expect(out.stderr).toMatch(/not an agent run: workflow type "orderWorkflow"/);
  }, 120000);

  it("an empty history: exit 2, not 1 (nondeterministic)", () => {
    for (const [name, text] of [
      ["empty-events.json", '{"events": []}'],
      ["empty-list.json", "[]"],
    ]) {
      const file = write(name, text);
      const out = replay(["--file", file]);
      expect(out.code).toBe(2);
      expect(out.stderr).toContain(file);
      expect(out.stderr).toMatch(/no events/);
    }
  }, 120000);

  it("a corrupt or missing file: exit 2 naming the file", () => {
    const corrupt = write("corrupt.json", '{"events": [ {"eventId": "1", ');
    const bad = replay(["--file", corrupt]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(corrupt);
    expect(bad.stderr).toMatch(/not a JSON history/);
    const missing = path.join(dir, "missing.json");
    const gone = replay(["--file", missing]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toContain(missing);
    expect(gone.stderr).toMatch(/cannot read the file \(ENOENT\)/);
  }, 120000);

  it("a workflow id the server does not know: exit 2 naming it", () => {
    const out = replay(["no-such-run-xyz", "--address", process.env.TEMPORAL_ADDRESS!]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain("workflow no-such-run-xyz");
  }, 120000);

  it("an agent run's history still replays: exit 0", () => {
    const out = replay(["--file", fixture]);
    expect(out.stderr).toBe("");
    expect(out.code).toBe(0);
    expect(out.stdout).toMatch(/deterministic/);
  }, 120000);
});
