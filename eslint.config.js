// Workflow code must stay deterministic: no Node built-ins and no runtime import of the provider layer.
import tseslint from "typescript-eslint";
import { builtinModules } from "node:module";

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "coverage/**", "bench/peers/**"] },
  ...tseslint.configs.recommended,
  {
    // Type-aware: a promise nobody awaits or catches loses its failure (and a run's update with it).
    files: ["**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
  // Folders by side (docs/design.md, "Layout"): each side imports at run time only from the sides below it; a type
  // import may cross (types leave no code behind). Entry points (src/cli, src/entry, src/demo, src/index.ts) may
  // import any side.
  ...sideWalls(),
  {
    // The console's browser code (bundled into /console/app.js by src/http/console/assets.ts): its own folder and
    // the pure code of src/shared only, types included. No packages, no Node built-ins: it runs in a page.
    files: ["src/http/console/web/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              regex: "^(?!\\./(?!.*\\.\\./)|(\\.\\./)+shared/)",
              message:
                "src/http/console/web imports only its own folder and src/shared (browser code: see eslint.config.js).",
            },
          ],
        },
      ],
    },
  },
  {
    // The sandbox: workflow code, and the pure code it shares with every side.
    files: ["src/workflows/**/*.ts", "src/shared/**/*.ts"],
    rules: {
      "no-restricted-globals": [
        "error",
        { name: "setTimeout", message: "Use sleep() from @temporalio/workflow." },
        { name: "setInterval", message: "Not deterministic." },
      ],
      "no-restricted-properties": ["error", { object: "Math", property: "random", message: "Not deterministic." }],
    },
  },
);

/** Which sides each side may import from at run time (besides itself and packages). */
function sideWalls() {
  const SIDES = {
    // Pure and deterministic: contracts, wire types, input checks. Loaded by every side, the workflow sandbox included.
    shared: [],
    // The workflow sandbox: the loop.
    workflows: ["shared"],
    // Node code both sides load: the payload codec, the blob store, connections, the dev server.
    node: ["shared"],
    // The Temporal client side: starting and reading runs.
    client: ["shared", "node"],
    // The HTTP app: run API, console, codec server, health (hosted by a client process or a worker process).
    http: ["shared", "node", "client"],
    // The worker side: activities, tools, MCP, telemetry, the worker and its process.
    worker: ["shared", "node", "client", "http"],
  };
  const sandbox = ["shared", "workflows"];
  return Object.entries(SIDES).map(([side, may]) => {
    const others = Object.keys(SIDES).filter((s) => s !== side && !may.includes(s));
    const patterns = others.map((other) => ({
      group: [`**/${other}/**`, `../${other}/*`, `./${other}/*`],
      allowTypeImports: true,
      message: `src/${side} may not import src/${other} at run time (folders by side: see eslint.config.js).`,
    }));
    if (sandbox.includes(side))
      patterns.push(
        {
          group: ["@jai/ai", "@jai/ai/*"],
          allowTypeImports: true,
          message: "Workflow code may only `import type` from @jai/ai.",
        },
        {
          group: ["@temporalio/worker", "@temporalio/client", "@temporalio/activity"],
          allowTypeImports: side === "shared",
          message: "Workflow code imports @temporalio/workflow only.",
        },
      );
    return {
      files: [`src/${side}/**/*.ts`],
      rules: {
        "no-restricted-imports": [
          "error",
          {
            ...(sandbox.includes(side)
              ? {
                  paths: nodeBuiltins.map((name) => ({
                    name,
                    message: "Sandbox code is deterministic: no Node built-ins.",
                  })),
                }
              : {}),
            patterns,
          },
        ],
      },
    };
  });
}
