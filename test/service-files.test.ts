/**
 * The deploy files, checked statically (no Docker engine here): compose v2
 * validates docker-compose.yml and the topology it describes is the one the
 * README promises; hadolint passes the Dockerfile at warning level. Both tools
 * are built into ~/.cache/jai-tools when missing (`npm run ensure-tools`); a tool
 * that cannot be built fails the test.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureCompose, ensureHadolint } from "../scripts/tools.js";
import { repoRoot } from "./service/processes.js";

const BUILD_TIMEOUT = 15 * 60 * 1000;

function compose(args: string[], cwd = repoRoot) {
  return spawnSync(ensureCompose(), args, { cwd, encoding: "utf8", env: { ...process.env, COMPOSE_PROJECT_NAME: "" } });
}

interface ComposeService {
  image?: string;
  build?: { context: string };
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  deploy?: { replicas?: number };
  user?: string;
  environment?: Record<string, string>;
}

test("docker compose config -q accepts docker-compose.yml, and rejects a broken copy", () => {
  const ok = compose(["-f", "docker-compose.yml", "config", "-q"]);
  expect({ status: ok.status, stderr: ok.stderr }).toEqual({ status: 0, stderr: "" });

  // The validator is real: a dependency condition compose does not know fails.
  const dir = mkdtempSync(path.join(os.tmpdir(), "jai-compose-"));
  try {
    const broken = readFileSync(path.join(repoRoot, "docker-compose.yml"), "utf8").replace("condition: service_healthy", "condition: service_happy");
    writeFileSync(path.join(dir, "docker-compose.yml"), broken);
    const bad = compose(["-f", path.join(dir, "docker-compose.yml"), "--project-directory", repoRoot, "config", "-q"]);
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/service_happy|condition/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, BUILD_TIMEOUT);

test("the compose topology: PostgreSQL, schema by admin-tools, Temporal, UI, 2+ workers from the Dockerfile, in order", () => {
  const out = compose(["-f", "docker-compose.yml", "config", "--format", "json"]);
  expect(out.status).toBe(0);
  const services = (JSON.parse(out.stdout) as { services: Record<string, ComposeService> }).services;
  const byImage = (prefix: string) => Object.entries(services).filter(([, s]) => s.image?.startsWith(prefix)).map(([name]) => name);

  const [postgres] = byImage("postgres:");
  const [server] = byImage("temporalio/server:");
  const [ui] = byImage("temporalio/ui:");
  const adminTools = byImage("temporalio/admin-tools:");
  expect([postgres, server, ui].every(Boolean)).toBe(true);
  expect(byImage("temporalio/auto-setup")).toEqual([]);
  expect(services[postgres].healthcheck).toBeDefined();
  expect(services[server].healthcheck).toBeDefined();

  // Schema setup by admin-tools after PostgreSQL is healthy, the server after it completed.
  const schema = adminTools.find((name) => services[name].depends_on?.[postgres]?.condition === "service_healthy");
  expect(schema).toBeDefined();
  expect(services[server].depends_on?.[schema!]?.condition).toBe("service_completed_successfully");
  expect(services[ui].depends_on?.[server]?.condition).toBe("service_healthy");

  const workers = Object.entries(services).filter(([, s]) => s.build !== undefined);
  expect(workers).toHaveLength(1);
  const [, worker] = workers[0];
  expect(path.resolve(worker.build!.context)).toBe(repoRoot);
  expect(worker.deploy?.replicas).toBeGreaterThanOrEqual(2);
  expect(worker.healthcheck?.test.join(" ")).toContain("/readyz");
  expect(worker.environment?.TEMPORAL_ADDRESS).toBe(`${server}:7233`);
  // Workers start once the namespace exists, which needs a healthy server.
  const namespaceJob = Object.keys(worker.depends_on ?? {}).find((name) => adminTools.includes(name));
  expect(worker.depends_on?.[namespaceJob!]?.condition).toBe("service_completed_successfully");
  expect(services[namespaceJob!].depends_on?.[server]?.condition).toBe("service_healthy");
}, BUILD_TIMEOUT);

test("hadolint passes the Dockerfile at warning level; the image is multi-stage, non-root, prebundled, without dev dependencies", () => {
  const lint = spawnSync(ensureHadolint(), ["--failure-threshold", "warning", "Dockerfile"], { cwd: repoRoot, encoding: "utf8" });
  expect({ status: lint.status, out: lint.stdout + lint.stderr }).toMatchObject({ status: 0 });

  const dockerfile = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8");
  const stages = dockerfile.split("\n").filter((l) => /^FROM /.test(l));
  expect(stages.length).toBeGreaterThanOrEqual(2);
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  expect(runtime).toMatch(/^USER (?!root|0\b)\S+/m);
  expect(dockerfile).toMatch(/jai-agent\.js bundle dist\/workflow-bundle\.js/);
  expect(dockerfile).toMatch(/npm prune --omit=dev/);
  expect(runtime).toMatch(/ENTRYPOINT \["node", "dist\/cli\/worker-main\.js"\]/);

  // The linter is real: a Dockerfile with a warning-level finding fails.
  const dir = mkdtempSync(path.join(os.tmpdir(), "jai-hadolint-"));
  try {
    writeFileSync(path.join(dir, "Dockerfile"), "FROM node:latest\nRUN cd /app && npm ci\n");
    const bad = spawnSync(ensureHadolint(), ["--failure-threshold", "warning", path.join(dir, "Dockerfile")], { encoding: "utf8" });
    expect(bad.status).not.toBe(0);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, BUILD_TIMEOUT);
