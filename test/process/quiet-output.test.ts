/**
 * Quiet, complete output (issue 38, row 10): the worker process prints its banner (models, tools, the tools that
 * wait for a person, MCP servers, tracing, encryption) and nothing of the bundler's stats nor the own queue's
 * "No workflows registered" notice, even when it bundles at start (tracing and a codec here); and a worker built
 * with createAgentWorker the README's way prints no Temporal INFO lines (bundler stats, worker state changes).
 * Real processes against the dev server.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, describe, expect, it } from "@jest/globals";
import { killAllWorkers, repoRoot, startSourceWorker } from "../support/service/processes.js";
import { uniqueId, within } from "../support/helpers.js";
import { nodeEntry } from "../support/entry.js";

afterAll(() => killAllWorkers());

const KEY = "QK1:" + Buffer.alloc(32, 9).toString("base64");
/** What Temporal's INFO logging and the bundler print: none of it is wanted by default. */
const NOISE =
  /webpack|modules by path|orphan modules|compiled successfully|Worker state changed|No workflows registered/i;

describe("the worker process's output", () => {
  it("is the banner naming what it serves, with no bundler stats or notices", async () => {
    const worker = await startSourceWorker(
      ["--config", path.join(repoRoot, "test/fixtures/banner-config.ts"), "--task-queue", uniqueId("quiet")],
      {
        JAI_CODEC_KEYS: KEY,
        // Traces on (nothing is exported: no run starts), so the workflows are bundled at start.
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://127.0.0.1:9/v1/traces",
        JAI_LOG_LEVEL: undefined,
      },
    );
    try {
      const banner = worker.output();
      expect(banner).toMatch(/^ {2}tools: lookup, deploy, write_file; models: banner\/model-1, /m);
      expect(banner).toMatch(/^ {2}approval required: deploy, write_file \(when its predicate says\); /m);
      expect(banner).toMatch(/MCP servers: tickets \(http http:\/\/127\.0\.0\.1:9; approval: close_ticket\)$/m);
      expect(banner).not.toContain("never-printed");
      expect(banner).toMatch(/^ {2}tracing: on \(OTLP\); encryption: payload codec on$/m);
      expect(banner).not.toMatch(NOISE);
      // Banner, then "ready": nothing else.
      expect(banner.trim().split("\n")).toHaveLength(5);
    } finally {
      expect(await within(worker.stop(), 60_000, "drained")).toBe(0);
    }
    expect(worker.output()).not.toMatch(NOISE);
  }, 180_000);
});

describe("a worker built with createAgentWorker", () => {
  it("prints no Temporal INFO lines by default: no bundler stats, no worker state changes", async () => {
    // test/fixtures/library-worker.ts connects first and installs no Runtime, as the README's snippet does.
    const child = spawn(
      process.execPath,
      [...nodeEntry(path.join(repoRoot, "test/fixtures/library-worker.ts")), "createAgentWorker", uniqueId("quiet")],
      {
        cwd: repoRoot,
        env: { ...process.env, NODE_OPTIONS: "", JAI_LOG_LEVEL: "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      await within(
        new Promise<void>((resolve, reject) => {
          const onData = (chunk: Buffer) => {
            output += chunk.toString();
            if (/^\{.*\}$/m.test(output)) resolve();
          };
          child.stdout!.on("data", onData);
          child.stderr!.on("data", onData);
          void exited.then((code) => reject(new Error(`worker exited ${code}: ${output}`)));
        }),
        120_000,
        "the worker polling",
      );
    } finally {
      child.kill("SIGTERM");
    }
    expect(await within(exited, 60_000, "drained")).toBe(0);
    // Its one line (the fixture's own), and nothing of Temporal's, through start and drain.
    expect(output).not.toMatch(NOISE);
    expect(output.trim().split("\n")).toHaveLength(1);
  }, 180_000);
});
