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
  {
    // The loop, and fast failover's workflow code (its presence workflow and workflow entry).
    files: [
      "src/workflows/**/*.ts",
      "src/common/**/*.ts",
      "src/failover/presence-workflow.ts",
      "src/failover/workflows.ts",
    ],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: nodeBuiltins.map((name) => ({ name, message: "Workflow code is deterministic: no Node built-ins." })),
          patterns: [
            {
              group: ["@jai/ai", "@jai/ai/*"],
              allowTypeImports: true,
              message: "Workflow code may only `import type` from @jai/ai.",
            },
            {
              group: ["**/activities/**"],
              allowTypeImports: true,
              message: "Workflows reach activities through proxyActivities only.",
            },
            {
              group: ["@temporalio/worker", "@temporalio/client", "@temporalio/activity"],
              message: "Workflow code imports @temporalio/workflow only.",
            },
          ],
        },
      ],
      "no-restricted-globals": [
        "error",
        { name: "setTimeout", message: "Use sleep() from @temporalio/workflow." },
        { name: "setInterval", message: "Not deterministic." },
      ],
      "no-restricted-properties": ["error", { object: "Math", property: "random", message: "Not deterministic." }],
    },
  },
);
