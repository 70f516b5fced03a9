/** How the launcher finds the Temporal CLI. (Starting it is what every other test file relies on.) */
import { afterEach, describe, expect, it } from "@jest/globals";
import { chmod, mkdir, mkdtemp, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { findTemporalCli, freePort, portInUse, waitForServer } from "../../src/node/dev-server.js";

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

async function fakeCli(dir: string): Promise<string> {
  const file = path.join(dir, "temporal");
  await writeFile(file, "#!/bin/sh\nexit 0\n");
  await chmod(file, 0o755);
  return file;
}

describe("findTemporalCli", () => {
  it("prefers TEMPORAL_CLI_PATH, then PATH, then the cache folder", async () => {
    const envDir = await mkdtemp(path.join(os.tmpdir(), "cli-env-"));
    const pathDir = await mkdtemp(path.join(os.tmpdir(), "cli-path-"));
    const cacheDir = await mkdtemp(path.join(os.tmpdir(), "cli-cache-"));
    const fromEnv = await fakeCli(envDir);
    const fromPath = await fakeCli(pathDir);
    await mkdir(path.join(cacheDir, "bin"));
    const cached = await fakeCli(path.join(cacheDir, "bin"));
    process.env.JAI_TEMPORAL_HOME = cacheDir;
    process.env.TEMPORAL_CLI_PATH = fromEnv;
    process.env.PATH = `${pathDir}${path.delimiter}${saved.PATH}`;
    expect(findTemporalCli({ allowBuild: false })).toBe(fromEnv);
    delete process.env.TEMPORAL_CLI_PATH;
    expect(findTemporalCli({ allowBuild: false })).toBe(fromPath);
    process.env.PATH = "/nonexistent";
    expect(findTemporalCli({ allowBuild: false })).toBe(cached);
    process.env.JAI_TEMPORAL_HOME = path.join(cacheDir, "empty");
    expect(findTemporalCli({ allowBuild: false })).toBeUndefined();
  });

  it("refuses a TEMPORAL_CLI_PATH that is not executable", () => {
    process.env.TEMPORAL_CLI_PATH = "/nonexistent/temporal";
    expect(() => findTemporalCli({ allowBuild: false })).toThrow(/not an executable/);
  });
});

describe("ports and readiness", () => {
  it("finds a free port and sees the test server's port in use", async () => {
    const port = await freePort();
    expect(await portInUse(port)).toBe(false);
    const [host, serverPort] = (process.env.TEMPORAL_ADDRESS ?? "").split(":");
    expect(await portInUse(Number(serverPort), host)).toBe(true);
  });
  it("waits for the real server and gives up on a dead address with a clear error", async () => {
    await waitForServer(process.env.TEMPORAL_ADDRESS!, 10000);
    const dead = `127.0.0.1:${await freePort()}`;
    await expect(waitForServer(dead, 1500)).rejects.toThrow(/did not answer within 1500 ms/);
  });
});
