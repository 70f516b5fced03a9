/**
 * A throwaway PostgreSQL for the cluster suite: Debian's server binaries, a
 * data folder under /tmp, its own port and socket folder. PostgreSQL refuses to
 * run as root, so as root (CI) it runs as the `postgres` user.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { findPostgres } from "../../../scripts/tools.js";

export interface Postgres {
  port: number;
  user: string;
  stop(): void;
  /** Stops it the hard way (`-m immediate`, as a crash would) and starts it again on the same data and port. */
  restart(): void;
}

function postgresUid(): { uid: number; gid: number } {
  const r = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
  const g = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
  if (r.status !== 0)
    throw new Error("Running as root, PostgreSQL needs a `postgres` user (Debian's postgresql package creates it)");
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

export function startPostgres(port: number): Postgres {
  const { initdb, pgCtl } = findPostgres();
  const dir = mkdtempSync(path.join(os.tmpdir(), "jai-pg-"));
  const data = path.join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? postgresUid() : undefined;
  if (owner) {
    chownSync(dir, owner.uid, owner.gid);
    chmodSync(dir, 0o700);
  }
  const exec = (file: string, args: string[]) => {
    const r = asRoot
      ? spawnSync("runuser", ["-u", "postgres", "--", file, ...args], { encoding: "utf8", cwd: dir })
      : spawnSync(file, args, { encoding: "utf8", cwd: dir });
    if (r.status !== 0) throw new Error(`${path.basename(file)} ${args.join(" ")} failed: ${r.stderr || r.stdout}`);
  };
  exec(initdb, ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"]);
  // Socket in our own folder: /var/run/postgresql may not exist or may belong to a system instance.
  const start = () =>
    exec(pgCtl, [
      "-D",
      data,
      "-l",
      path.join(dir, "log"),
      "-w",
      "-t",
      "60",
      "-o",
      `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`,
      "start",
    ]);
  start();
  let stopped = false;
  return {
    port,
    user: "postgres",
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        exec(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    restart() {
      exec(pgCtl, ["-D", data, "-m", "immediate", "-w", "stop"]);
      start();
    },
  };
}
