/**
 * The package as a user gets it: `npm pack`, installed into an empty project
 * (from the npm cache, offline when it holds everything), the README snippet
 * type-checked against the shipped types and run, the `jai-agent worker` bin
 * serving a client that imports only `jai-agent/client`, that subpath's
 * import graph free of the worker, the bundler and the dev server, and the
 * console served from its prebuilt bundle (no esbuild installed).
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { randomUUID } from "node:crypto";
import { repoRoot } from "../support/service/processes.js";

const TIMEOUT = 10 * 60 * 1000;
let project: string;
let tarball: string;

function sh(cmd: string, args: string[], cwd: string, env: Record<string, string | undefined> = {}) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, NODE_OPTIONS: "", ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed: ${r.stderr}\n${r.stdout}`.slice(-4000));
  return r.stdout;
}

beforeAll(() => {
  project = mkdtempSync(path.join(os.tmpdir(), "jai-package-"));
  // prepack (build + workflow bundle) prints before npm's JSON.
  const packOut = sh("npm", ["pack", "--json", "--pack-destination", project], repoRoot);
  const packed = JSON.parse(packOut.slice(packOut.search(/^\[/m))) as { filename: string }[];
  tarball = path.join(project, packed[0].filename);
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, "package.json"), "utf8")) as {
    peerDependencies: Record<string, string>;
    peerDependenciesMeta: Record<string, { optional?: boolean }>;
  };
  const version = (name: string) =>
    (JSON.parse(readFileSync(path.join(repoRoot, "node_modules", name, "package.json"), "utf8")) as { version: string })
      .version;
  // The required peers only: the optional ones (the MCP SDK, OpenTelemetry's SDK, the testing kit) stay out, as in a
  // project that never uses their features.
  const peers = Object.keys(pkg.peerDependencies).filter((name) => !pkg.peerDependenciesMeta[name]?.optional);
  writeFileSync(
    path.join(project, "package.json"),
    JSON.stringify({ name: "empty-project", private: true, type: "module" }, null, 2),
  );
  sh(
    "npm",
    [
      "install",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarball,
      ...peers.map((p) => `${p}@${version(p)}`),
      `@sinclair/typebox@${version("@sinclair/typebox")}`,
    ],
    project,
  );
}, TIMEOUT);

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

test("the tarball ships built code, types, the workflow bundle and the bin; no sources or tests", () => {
  const files = sh("tar", ["-tzf", tarball], project).split("\n");
  expect(files).toEqual(
    expect.arrayContaining([
      "package/dist/index.js",
      "package/dist/index.d.ts",
      "package/dist/entry/client.js",
      "package/dist/workflow-bundle.js",
      "package/dist/cli/jai-agent.js",
      "package/dist/http/console/bundle/app.js",
      "package/dist/http/console/bundle/style.css",
    ]),
  );
  expect(files.filter((f) => /^package\/(src|test)\//.test(f) || (f.endsWith(".ts") && !f.endsWith(".d.ts")))).toEqual(
    [],
  );
  expect(existsSync(path.join(project, "node_modules", ".bin", "jai-agent"))).toBe(true);
  // The console is served from the prebuilt bundle: the installed package has no esbuild to build one.
  const assets = path.join(project, "node_modules", "jai-agent", "dist", "http", "console", "assets.js");
  const served = sh(
    process.execPath,
    ["-e", `import(${JSON.stringify(pathToFileURL(assets).href)}).then((m) => console.log(m.consoleFiles().shell))`],
    project,
  );
  expect(served).toMatch(/\/console\/app\.js\?v=[\w-]{16}/);
  expect(existsSync(path.join(project, "node_modules", "esbuild"))).toBe(false);
});

test(
  "the README snippet type-checks against the installed package and runs a client against a worker",
  () => {
    const readme = readFileSync(path.join(repoRoot, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Use it from your code"));
    const snippet = /```ts\n([\s\S]*?)```/.exec(section)![1];
    const address = process.env.TEMPORAL_ADDRESS!;
    writeFileSync(
      path.join(project, "snippet.ts"),
      `${snippet.replaceAll("localhost:7233", address)}\nconsole.log(JSON.stringify({ stopReason: result.stopReason, messages: result.messages.length }));\n`,
    );
    writeFileSync(
      path.join(project, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          strict: true,
          skipLibCheck: true,
          typeRoots: [path.join(repoRoot, "node_modules", "@types")],
          types: ["node"],
        },
        files: ["snippet.ts"],
      }),
    );
    sh(process.execPath, [path.join(repoRoot, "node_modules", "typescript", "bin", "tsc"), "-p", "."], project);
    // No key for the snippet's model: the run must still go through worker and client and end, with the reason.
    const out = sh(process.execPath, ["snippet.js"], project, { ANTHROPIC_API_KEY: undefined });
    const last = JSON.parse(out.trim().split("\n").pop()!) as { stopReason: string; messages: number };
    expect(last.messages).toBeGreaterThanOrEqual(2);
    expect(["stop", "error"]).toContain(last.stopReason);
  },
  TIMEOUT,
);

test(
  "without the optional packages, a feature that needs one is refused naming the package; the rest works",
  () => {
    expect(existsSync(path.join(project, "node_modules", "@modelcontextprotocol", "sdk"))).toBe(false);
    expect(existsSync(path.join(project, "node_modules", "@opentelemetry", "sdk-trace-base"))).toBe(false);
    writeFileSync(
      path.join(project, "mcp-worker.mjs"),
      `import { NativeConnection } from "@temporalio/worker";
import { createAgentWorker } from "jai-agent/worker";
const connection = await NativeConnection.connect({ address: ${JSON.stringify(process.env.TEMPORAL_ADDRESS)} });
try {
  await createAgentWorker({ connection, taskQueue: "optional-mcp", mcpServers: [{ name: "m", transport: { type: "http", url: "http://127.0.0.1:9/mcp" } }] });
  console.log("created");
} catch (err) {
  console.log(\`\${err.name}: \${err.message}\`);
} finally {
  await connection.close();
}
`,
    );
    expect(sh(process.execPath, ["mcp-worker.mjs"], project)).toContain(
      "MissingPackageError: mcpServers (MCP tool sources) needs the package @modelcontextprotocol/sdk, which is not installed: npm install @modelcontextprotocol/sdk",
    );
    // The worker process asked for traces by the standard environment: it exits naming what to install.
    const traced = spawnSync(
      path.join(project, "node_modules", ".bin", "jai-agent"),
      ["worker", "--task-queue", "optional-otel"],
      {
        cwd: project,
        env: { ...process.env, NODE_OPTIONS: "", OTEL_TRACES_EXPORTER: "otlp" },
        encoding: "utf8",
        timeout: 60000,
      },
    );
    expect(traced.status).not.toBe(0);
    expect(`${traced.stdout}${traced.stderr}`).toMatch(
      /traces \(OTEL_\* environment\) needs the package @(temporalio|opentelemetry)\/[a-z-]+, which is not installed/,
    );
  },
  TIMEOUT,
);

test(
  "`jai-agent worker` (the bin) serves a client process that imports only jai-agent/client",
  async () => {
    const taskQueue = `package-${randomUUID()}`;
    const worker = spawn(
      path.join(project, "node_modules", ".bin", "jai-agent"),
      ["worker", "--task-queue", taskQueue, "--workspace", repoRoot],
      {
        cwd: project,
        env: { ...process.env, NODE_OPTIONS: "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    const exited = new Promise<number | null>((resolve) => worker.once("exit", resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        const onData = (chunk: Buffer) => {
          output += chunk.toString();
          if (/^ready$/m.test(output)) resolve();
        };
        worker.stdout!.on("data", onData);
        worker.stderr!.on("data", onData);
        void exited.then((code) => reject(new Error(`worker exited ${code}: ${output}`)));
      });
      writeFileSync(
        path.join(project, "client.mjs"),
        `import { Client, Connection } from "@temporalio/client";
import { startAgentRun } from "jai-agent/client";
const connection = await Connection.connect({ address: process.env.TEMPORAL_ADDRESS });
const handle = await startAgentRun(new Client({ connection }), { taskQueue: process.argv[2], model: "demo/offline-scripted", prompt: "What is this project?" });
const result = await handle.result();
console.log(JSON.stringify({ stopReason: result.stopReason, turns: result.turns }));
await connection.close();
`,
      );
      const out = sh(process.execPath, ["client.mjs", taskQueue], project);
      expect(JSON.parse(out.trim())).toMatchObject({ stopReason: "stop", turns: 3 });
    } finally {
      worker.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  },
  TIMEOUT,
);

/** The files a built module loads (value imports only) and the packages they import. */
function importGraph(entry: string): { files: Set<string>; packages: Set<string> } {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const code = readFileSync(file, "utf8");
    // Only value imports load code; `import type` is erased by tsc.
    for (const m of code.matchAll(/(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+"([^"]+)"|import\("([^"]+)"\)/g)) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith(".")) visit(path.resolve(path.dirname(file), spec));
      else packages.add(spec);
    }
  };
  visit(entry);
  return { files: seen, packages };
}

test("jai-agent/client's import graph has no worker, bundler or dev server", () => {
  const dist = path.join(project, "node_modules", "jai-agent", "dist");
  const { files: seen, packages } = importGraph(path.join(dist, "entry", "client.js"));
  expect(seen.size).toBeGreaterThan(3);
  expect(packages).toContain("@temporalio/workflow");
  expect([...packages].filter((p) => /@temporalio\/(worker|testing)|webpack|swc/.test(p))).toEqual([]);
  expect(
    [...seen].map((f) => path.relative(dist, f)).filter((f) => /dev-server|worker\.js|plugin|cli\//.test(f)),
  ).toEqual([]);
});
