/**
 * Jest runs the TypeScript sources as ESM through SWC; one Temporal dev server serves every test file.
 * Layers (docs/testing.md): test/unit needs no server (`npm run test:unit`), test/server uses the one dev
 * server, test/process adds child processes, test/browser Chromium; test/cluster has its own config.
 */
export default {
  testEnvironment: "node",
  extensionsToTreatAsEsm: [".ts"],
  transform: {
    "^.+\\.ts$": [
      "@swc/jest",
      { jsc: { parser: { syntax: "typescript" }, target: "es2022" }, module: { type: "es6" } },
    ],
  },
  moduleNameMapper: { "^(\\.{1,2}/.*)\\.js$": "$1" },
  testMatch: ["<rootDir>/test/**/*.test.ts"],
  // The cluster suite brings up its own PostgreSQL and Temporal server: `npm run test:cluster`.
  testPathIgnorePatterns: ["/node_modules/", "<rootDir>/test/cluster/"],
  reporters: ["default", "<rootDir>/test/support/slowest-files.js"],
  globalSetup: "<rootDir>/test/support/global-setup.js",
  globalTeardown: "<rootDir>/test/support/global-teardown.js",
  // In-process workers run workflow code on the worker's thread: test/support/in-thread-workflows.ts.
  setupFilesAfterEnv: ["<rootDir>/test/support/in-thread-workflows.ts"],
  // A bound against a hang, not a verdict: tests decide from what the system recorded. 60 s was too short for a few
  // process tests on 2 cores with two busy loops (npm run test:stress).
  testTimeout: 180000,
  // Four files at a time: process files mostly wait on timeouts and child processes (docs/testing.md).
  maxWorkers: 4,
  // Tests marked `it.concurrent` (independent scenarios that mostly wait on timers and child processes) run up to
  // this many at a time within their file.
  maxConcurrency: 4,
};
