/**
 * A worker loads its optional parts only when it uses them: OpenTelemetry when it traces, the MCP client (and its
 * schema libraries) when it has MCP servers. Loaded at every start, they were ~400 of a worker's ~1,400 modules,
 * ~0.4 s of CPU for each worker process and each program that imports the worker. Measured in a fresh process
 * with a loader hook (test/fixtures/loaded-packages.ts).
 */
import { describe, expect, it } from "@jest/globals";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { nodeEntry } from "../support/entry.js";
import { repoRoot } from "../support/service/processes.js";

const TRACING = ["@opentelemetry/sdk-trace-base", "@opentelemetry/resources", "@temporalio/interceptors-opentelemetry"];
const MCP = ["@modelcontextprotocol/sdk", "zod"];

/** The packages importing `module` (a path from the repository's root, `.js`) loads in a new process. */
async function loadedBy(module: string): Promise<string[]> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...nodeEntry("test/fixtures/loaded-packages.ts"), module],
    {
      cwd: repoRoot,
      encoding: "utf8",
      env: { ...process.env, NODE_OPTIONS: "" },
    },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1)!) as string[];
}

describe("a worker loads what it does not use only when it uses it", () => {
  it.concurrent.each([
    ["the library's worker entry (jai-agent/worker)", "src/entry/worker.js"],
    ["the worker process (jai-agent worker), with no OTEL_* environment", "src/worker/process/run.js"],
  ])("%s loads neither OpenTelemetry's SDK nor the MCP client", async (_what, module) => {
    const loaded = await loadedBy(module);
    expect(loaded).toContain("@temporalio/worker");
    expect(loaded.filter((p) => [...TRACING, ...MCP].includes(p))).toEqual([]);
  });

  it.concurrent("the probe sees them where they are used: tracing and the MCP tool source", async () => {
    expect(await loadedBy("src/worker/telemetry/tracing.js")).toEqual(expect.arrayContaining(TRACING));
    expect(await loadedBy("src/worker/mcp/source.js")).toEqual(expect.arrayContaining(MCP));
  });
});
