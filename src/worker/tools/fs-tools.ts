/**
 * Two real tools for the demo and for users: read a file, list a directory.
 * Both are confined to a workspace root: a path that leaves it, directly or
 * through a symlink, is refused.
 */
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import path from "node:path";
import { Type } from "@sinclair/typebox";
import type { AgentTool } from "../../shared/contracts.js";

const MAX_READ_BYTES = 50 * 1024;
const MAX_ENTRIES = 500;

/** Resolves `relative` inside `root`, refusing anything that ends up outside it. */
export async function resolveInside(root: string, relative: string): Promise<string> {
  const realRoot = await realpath(root);
  const candidate = path.resolve(realRoot, relative);
  let real: string;
  try {
    real = await realpath(candidate);
  } catch {
    throw new Error(`No such file or directory: ${relative}`);
  }
  if (real !== realRoot && !real.startsWith(realRoot + path.sep))
    throw new Error(`Path is outside the workspace: ${relative}`);
  return real;
}

const readParams = Type.Object({
  path: Type.String({ description: "File path, relative to the workspace root" }),
  offset: Type.Optional(Type.Integer({ minimum: 1, description: "First line to read (1-based)" })),
  limit: Type.Optional(Type.Integer({ minimum: 1, description: "Most lines to read" })),
});

const listParams = Type.Object({
  path: Type.Optional(Type.String({ description: "Directory, relative to the workspace root; default the root" })),
});

/** `read_file` and `list_dir` over `root`. Both are read-only, so they run in parallel. */
export function createFileTools(root: string): [AgentTool<typeof readParams>, AgentTool<typeof listParams>] {
  const readTool: AgentTool<typeof readParams> = {
    name: "read_file",
    label: "read",
    description: `Read a text file of the workspace. Output is cut at ${MAX_READ_BYTES / 1024} KB; use offset/limit to page.`,
    parameters: readParams,
    executionMode: "parallel",
    async execute(_id, args, signal) {
      const file = await resolveInside(root, args.path);
      if ((await stat(file)).isDirectory()) throw new Error(`${args.path} is a directory; use list_dir`);
      const text = await readFile(file, { encoding: "utf8", signal });
      const lines = text.split("\n");
      const first = (args.offset ?? 1) - 1;
      const selected = lines.slice(first, args.limit ? first + args.limit : undefined).join("\n");
      const cut = Buffer.byteLength(selected) > MAX_READ_BYTES;
      const body = cut ? Buffer.from(selected).subarray(0, MAX_READ_BYTES).toString("utf8") : selected;
      const note = cut
        ? `\n\n[cut at ${MAX_READ_BYTES} bytes of ${Buffer.byteLength(selected)}; read on with offset/limit]`
        : "";
      return {
        content: [{ type: "text", text: body + note }],
        details: { path: args.path, lines: lines.length, bytes: Buffer.byteLength(text) },
      };
    },
  };
  const listTool: AgentTool<typeof listParams> = {
    name: "list_dir",
    label: "ls",
    description: "List a directory of the workspace; directories end with '/'.",
    parameters: listParams,
    executionMode: "parallel",
    async execute(_id, args) {
      const dir = await resolveInside(root, args.path ?? ".");
      const entries = (await readdir(dir, { withFileTypes: true }))
        .filter((e) => e.name !== "node_modules" && e.name !== ".git")
        .map((e) => (e.isDirectory() ? `${e.name}/` : e.name))
        .sort();
      const shown = entries.slice(0, MAX_ENTRIES);
      const more = entries.length > shown.length ? `\n[${entries.length - shown.length} more entries not shown]` : "";
      return {
        content: [{ type: "text", text: shown.join("\n") + more }],
        details: { path: args.path ?? ".", entries: entries.length },
      };
    },
  };
  return [readTool, listTool];
}
