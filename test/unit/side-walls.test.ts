/**
 * Folders by side (eslint.config.js): a planted import from a side a file may not reach at run time fails lint;
 * the same import as a type, or from an allowed side, passes; the console's browser code (src/http/console/web)
 * imports only its folder and src/shared. Also: each run feature's input part
 * (shared/feature-inputs.ts) and the feature itself (workflows/features/index.ts) are listed in the same order.
 */
import { describe, expect, it } from "@jest/globals";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ESLint } from "eslint";
import { FEATURE_INPUTS } from "../../src/shared/feature-inputs.js";
import { RUN_FEATURES } from "../../src/workflows/features/index.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// The planted files are not on disk: lint them without type information (the walls need none).
const eslint = new ESLint({
  cwd: root,
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false } },
    rules: { "@typescript-eslint/no-floating-promises": "off", "@typescript-eslint/no-misused-promises": "off" },
  },
});

async function walls(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return result.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe("folders by side: the lint walls", () => {
  it.each([
    ["src/shared/planted.ts", "../workflows/patches.js", "src/shared may not import src/workflows"],
    ["src/shared/planted.ts", "node:fs", "no Node built-ins"],
    ["src/workflows/planted.ts", "../worker/activities/tool.js", "src/workflows may not import src/worker"],
    ["src/workflows/planted.ts", "../node/codec/aes-gcm.js", "src/workflows may not import src/node"],
    ["src/workflows/features/planted.ts", "../../client/client.js", "src/workflows may not import src/client"],
    ["src/client/planted.ts", "../worker/worker.js", "src/client may not import src/worker"],
    ["src/client/events/planted.ts", "../../http/server.js", "src/client may not import src/http"],
    ["src/node/codec/planted.ts", "../../client/client.js", "src/node may not import src/client"],
    ["src/http/planted.ts", "../worker/events/tap.js", "src/http may not import src/worker"],
    ["src/http/console/web/planted.ts", "../../server.js", "src/http/console/web imports only its own folder"],
    ["src/http/console/web/planted.ts", "node:fs", "src/http/console/web imports only its own folder"],
    ["src/http/console/web/planted.ts", "@jai/ai", "src/http/console/web imports only its own folder"],
  ])("%s importing %s fails", async (file, from, message) => {
    const problems = await walls(file, `import * as planted from "${from}";\nexport const used = planted;\n`);
    expect(problems.join("\n")).toContain(message);
  });

  it("a type import may cross; an allowed side passes", async () => {
    expect(
      await walls(
        "src/http/planted.ts",
        `import type { EventTap } from "../worker/events/tap.js";\nexport type T = EventTap;\n`,
      ),
    ).toEqual([]);
    expect(
      await walls("src/worker/planted.ts", `import * as c from "../client/client.js";\nexport const used = c;\n`),
    ).toEqual([]);
    expect(
      await walls(
        "src/http/console/web/planted.ts",
        `import { EventDeduper } from "../../../shared/event-ids.js";\nimport { el } from "./common.js";\nexport const used = [EventDeduper, el];\n`,
      ),
    ).toEqual([]);
    expect(
      await walls(
        "src/workflows/planted.ts",
        `import * as s from "../shared/budget-checks.js";\nexport const used = s;\n`,
      ),
    ).toEqual([]);
  });
});

describe("run features", () => {
  it("each feature's input part and the feature are listed in the same order, once", () => {
    expect(RUN_FEATURES.map((f) => f.name)).toEqual(FEATURE_INPUTS.map((f) => f.name));
    expect(new Set(RUN_FEATURES.map((f) => f.name)).size).toBe(RUN_FEATURES.length);
  });
});
