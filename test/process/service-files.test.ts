/**
 * The deploy files, checked statically (no Docker engine here): compose v2
 * validates docker-compose.yml and the topology it describes is the one the
 * README promises; hadolint passes the Dockerfile at warning level. Both tools
 * are built into ~/.cache/jai-tools when missing (`npm run ensure-tools`); a tool
 * that cannot be built fails the test.
 */
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ensureCompose, ensureHadolint } from "../../scripts/tools.js";
import { repoRoot } from "../support/service/processes.js";

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

test(
  "docker compose config -q accepts docker-compose.yml, and rejects a broken copy",
  () => {
    const ok = compose(["-f", "docker-compose.yml", "config", "-q"]);
    expect({ status: ok.status, stderr: ok.stderr }).toEqual({ status: 0, stderr: "" });

    // The validator is real: a dependency condition compose does not know fails.
    const dir = mkdtempSync(path.join(os.tmpdir(), "jai-compose-"));
    try {
      const broken = readFileSync(path.join(repoRoot, "docker-compose.yml"), "utf8").replace(
        "condition: service_healthy",
        "condition: service_happy",
      );
      writeFileSync(path.join(dir, "docker-compose.yml"), broken);
      const bad = compose([
        "-f",
        path.join(dir, "docker-compose.yml"),
        "--project-directory",
        repoRoot,
        "config",
        "-q",
      ]);
      expect(bad.status).not.toBe(0);
      expect(bad.stderr).toMatch(/service_happy|condition/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  BUILD_TIMEOUT,
);

test(
  "the compose topology: PostgreSQL, schema by admin-tools, Temporal, UI, 2+ workers from the Dockerfile, in order",
  () => {
    const out = compose(["-f", "docker-compose.yml", "config", "--format", "json"]);
    expect(out.status).toBe(0);
    const services = (JSON.parse(out.stdout) as { services: Record<string, ComposeService> }).services;
    const byImage = (prefix: string) =>
      Object.entries(services)
        .filter(([, s]) => s.image?.startsWith(prefix))
        .map(([name]) => name);

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
    // The deployment version (Worker Deployment Versioning) passes through, unversioned unless set.
    expect(worker.environment).toMatchObject({ TEMPORAL_DEPLOYMENT_NAME: "", TEMPORAL_WORKER_BUILD_ID: "" });
    // Workers start once the namespace exists, which needs a healthy server.
    const namespaceJob = Object.keys(worker.depends_on ?? {}).find((name) => adminTools.includes(name));
    expect(worker.depends_on?.[namespaceJob!]?.condition).toBe("service_completed_successfully");
    expect(services[namespaceJob!].depends_on?.[server]?.condition).toBe("service_healthy");
  },
  BUILD_TIMEOUT,
);

test(
  "hadolint passes the Dockerfile at warning level; the image is multi-stage, non-root, prebundled, without dev dependencies",
  () => {
    const lint = spawnSync(ensureHadolint(), ["--failure-threshold", "warning", "Dockerfile"], {
      cwd: repoRoot,
      encoding: "utf8",
    });
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
      const bad = spawnSync(ensureHadolint(), ["--failure-threshold", "warning", path.join(dir, "Dockerfile")], {
        encoding: "utf8",
      });
      expect(bad.status).not.toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
  BUILD_TIMEOUT,
);

test(
  "observability profile: Prometheus scrapes the workers' /metrics and the server, Grafana provisions the dashboard; all panels use real metrics",
  async () => {
    const plain = compose(["-f", "docker-compose.yml", "config", "--format", "json"]);
    const plainServices = Object.keys((JSON.parse(plain.stdout) as { services: Record<string, unknown> }).services);
    expect(plainServices).not.toContain("prometheus");
    const out = compose(["-f", "docker-compose.yml", "--profile", "observability", "config", "--format", "json"]);
    expect({ status: out.status, stderr: out.stderr }).toEqual({ status: 0, stderr: "" });
    const services = (
      JSON.parse(out.stdout) as {
        services: Record<string, ComposeService & { volumes?: { source: string; target: string }[] }>;
      }
    ).services;
    const prometheus = Object.entries(services).find(([, s]) => s.image?.startsWith("prom/prometheus:"));
    const grafana = Object.entries(services).find(([, s]) => s.image?.startsWith("grafana/grafana:"));
    expect(prometheus && grafana).toBeTruthy();
    const mounted = (s: { volumes?: { source: string; target: string }[] }) =>
      Object.fromEntries((s.volumes ?? []).map((v) => [v.target, path.relative(repoRoot, v.source)]));
    expect(mounted(prometheus![1])["/etc/prometheus/prometheus.yml"]).toBe("deploy/prometheus/prometheus.yml");
    expect(mounted(grafana![1])).toMatchObject({
      "/etc/grafana/provisioning": "deploy/grafana/provisioning",
      "/var/lib/grafana/dashboards": "deploy/grafana/dashboards",
    });

    // The scrape config targets the worker service on the port its /metrics is served (JAI_HEALTH_PORT) and the server's exporter.
    const { load } = createRequire(import.meta.url)("js-yaml") as { load(text: string): unknown };
    const config = load(readFileSync(path.join(repoRoot, "deploy/prometheus/prometheus.yml"), "utf8")) as {
      scrape_configs: {
        job_name: string;
        metrics_path?: string;
        dns_sd_configs?: { names: string[]; port: number }[];
        static_configs?: { targets: string[] }[];
      }[];
    };
    const workerJob = config.scrape_configs.find((j) => j.dns_sd_configs?.[0]?.names.includes("worker"));
    expect(workerJob?.metrics_path).toBe("/metrics");
    expect(String(workerJob?.dns_sd_configs?.[0]?.port)).toBe(services.worker.environment?.JAI_HEALTH_PORT);
    const serverExporter = services.temporal.environment?.PROMETHEUS_ENDPOINT?.split(":").pop();
    expect(config.scrape_configs.flatMap((j) => j.static_configs?.flatMap((c) => c.targets) ?? [])).toContain(
      `temporal:${serverExporter}`,
    );
    for (const file of ["datasources/prometheus.yml", "dashboards/jai-agent.yml"])
      expect(load(readFileSync(path.join(repoRoot, "deploy/grafana/provisioning", file), "utf8"))).toBeTruthy();

    // Every panel queries metrics that exist: the agent's from its registry, Temporal's from the SDK core's names.
    const dashboard = JSON.parse(
      readFileSync(path.join(repoRoot, "deploy/grafana/dashboards/jai-agent.json"), "utf8"),
    ) as { uid: string; panels: { title: string; targets: { expr: string }[] }[] };
    expect(dashboard.uid).toBe("jai-agent");
    const { createAgentMetrics } = await import("../../src/worker/telemetry/metrics.js");
    const agentMetrics = (await createAgentMetrics().registry.getMetricsAsJSON()).map((m) => m.name);
    const temporalMetrics = [
      "temporal_workflow_failed_total",
      "temporal_workflow_task_schedule_to_start_latency",
      "temporal_worker_task_slots_used",
      "temporal_worker_task_slots_available",
    ];
    const known = new Set(
      [...agentMetrics, ...temporalMetrics].flatMap((n) => [n, `${n}_bucket`, `${n}_count`, `${n}_sum`]),
    );
    for (const panel of dashboard.panels) {
      expect(panel.targets.length).toBeGreaterThan(0);
      for (const { expr } of panel.targets) {
        const names = expr.match(/\b(jai_agent|temporal)_[a-z_]+/g) ?? [];
        expect({ panel: panel.title, unknown: names.filter((n) => !known.has(n)) }).toEqual({
          panel: panel.title,
          unknown: [],
        });
      }
    }
    for (const name of agentMetrics) expect(JSON.stringify(dashboard)).toContain(name);
  },
  BUILD_TIMEOUT,
);

test("the compose namespace job registers exactly the agent's search attributes", async () => {
  const script = readFileSync(path.join(repoRoot, "deploy/temporal/create-namespace.sh"), "utf8");
  const { cliSearchAttributeSpecs } = await import("../../src/shared/search-attributes.js");
  const listed = /for spec in ([^;]+); do/.exec(script)?.[1].trim().split(/\s+/);
  expect(listed).toEqual(cliSearchAttributeSpecs());
  expect(script).toMatch(
    /temporal operator search-attribute create --namespace "\$ns" --name "\$name" --type "\$\{spec#\*=\}"/,
  );
});
