/**
 * Live events with no setup on one machine (docs/streaming.md, "One machine"): a worker's run server writes its URL
 * and bearer token to a runtime file only its OS user can read (as notebook servers do), and a client of the same
 * user on the same host that finds that URL in a run's history takes the token from the file. The token still goes
 * only to the server the file names: a URL in history that no such file names gets none (docs/design.md §3).
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseUrl } from "../shared/urls.js";

/** What a runtime file holds. */
interface RunServerFile {
  url: string;
  token: string;
  pid: number;
}

const PREFIX = "run-server-";

/** This user's runtime directory: JAI_RUNTIME_DIR, else ~/.jai/runtime; undefined when JAI_RUNTIME_DIR is "off". */
export function runtimeDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.JAI_RUNTIME_DIR === "off") return undefined;
  return env.JAI_RUNTIME_DIR || path.join(os.homedir(), ".jai", "runtime");
}

/** Whether `pid` is a live process (ours or not: a signal 0 answers either way). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Owned by this user, not a symlink, and nobody else may read or write it (POSIX; never on Windows). */
function private_(file: string, directory: boolean): boolean {
  if (process.platform === "win32" || typeof process.getuid !== "function") return false;
  try {
    const stat = lstatSync(file);
    if (stat.isSymbolicLink() || (directory ? !stat.isDirectory() : !stat.isFile())) return false;
    return stat.uid === process.getuid() && (stat.mode & 0o077) === 0;
  } catch {
    return false;
  }
}

const originOf = (url: string) => parseUrl(url)?.origin;

/** Runtime files of live processes in `dir`, with their names. */
function entries(dir: string): { file: string; data: RunServerFile }[] {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith(PREFIX) && n.endsWith(".json"));
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const file = path.join(dir, name);
    try {
      const data = JSON.parse(readFileSync(file, "utf8")) as RunServerFile;
      return typeof data.url === "string" && typeof data.token === "string" && typeof data.pid === "number"
        ? [{ file, data }]
        : [];
    } catch {
      return [];
    }
  });
}

/**
 * Announces this process's run server at `url` to the same user's clients; returns what removes the file (also
 * removed at exit). Files of processes that are gone are removed on the way. Nothing is written on Windows, or
 * when the directory cannot be made private.
 */
export function announceRunServer(url: string, token: string, env: NodeJS.ProcessEnv = process.env): () => void {
  const dir = runtimeDir(env);
  if (!dir) return () => {};
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  } catch {
    return () => {};
  }
  if (!private_(dir, true)) return () => {};
  for (const { file, data } of entries(dir)) if (!alive(data.pid)) rmQuiet(file);
  const port = originOf(url)?.split(":").pop() ?? "0";
  const file = path.join(dir, `${PREFIX}${process.pid}-${port}.json`);
  const temp = `${file}.${Date.now()}.tmp`;
  try {
    writeFileSync(temp, JSON.stringify({ url, token, pid: process.pid } satisfies RunServerFile), {
      mode: 0o600,
      flag: "wx",
    });
    renameSync(temp, file);
  } catch {
    rmQuiet(temp);
    return () => {};
  }
  const remove = () => {
    rmQuiet(file);
    process.off("exit", remove);
  };
  process.on("exit", remove);
  return remove;
}

function rmQuiet(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Gone already.
  }
}

/**
 * The token of this user's run server at `url` (the origin a run's history named), from a runtime file that only
 * this user can read, written by a live process; undefined when there is none.
 */
export function runtimeToken(url: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = runtimeDir(env);
  const wanted = originOf(url);
  if (!dir || !wanted || !private_(dir, true)) return undefined;
  const found = entries(dir).find(
    ({ file, data }) => originOf(data.url) === wanted && private_(file, false) && alive(data.pid),
  );
  return found?.data.token;
}
