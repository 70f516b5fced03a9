/** The shipped file tools stay inside their workspace. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { mkdtemp, mkdir, rm, symlink, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { createFileTools } from "../../src/worker/tools/fs-tools.js";
import { textOf } from "../support/helpers.js";

let root: string;
let outside: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), "jai-ws-"));
  outside = await mkdtemp(path.join(os.tmpdir(), "jai-out-"));
  await mkdir(path.join(root, "src"));
  await writeFile(path.join(root, "src", "a.txt"), "line1\nline2\nline3\n");
  await writeFile(path.join(outside, "secret.txt"), "top secret");
  await symlink(path.join(outside, "secret.txt"), path.join(root, "link.txt"));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe("file tools", () => {
  it("reads and pages a file inside the workspace", async () => {
    const [read] = createFileTools(root);
    expect(textOf(await read.execute("1", { path: "src/a.txt" }))).toBe("line1\nline2\nline3\n");
    expect(textOf(await read.execute("2", { path: "src/a.txt", offset: 2, limit: 1 }))).toBe("line2");
  });
  it("lists a directory with directories marked", async () => {
    const [, list] = createFileTools(root);
    expect(textOf(await list.execute("1", {}))).toBe("link.txt\nsrc/");
  });
  it("refuses paths that leave the workspace, directly or by symlink", async () => {
    const [read, list] = createFileTools(root);
    await expect(read.execute("1", { path: "../" + path.basename(outside) + "/secret.txt" })).rejects.toThrow(
      /outside the workspace/,
    );
    await expect(read.execute("2", { path: "link.txt" })).rejects.toThrow(/outside the workspace/);
    await expect(list.execute("3", { path: "/etc" })).rejects.toThrow(/outside the workspace/);
    await expect(read.execute("4", { path: "missing.txt" })).rejects.toThrow(/No such file/);
    await expect(read.execute("5", { path: "src" })).rejects.toThrow(/is a directory/);
  });
});
