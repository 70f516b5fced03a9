/** Jest runs the TypeScript sources as ESM through SWC; one Temporal dev server serves every test file. */
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
  testPathIgnorePatterns: ["/node_modules/", "<rootDir>/test/cluster.test.ts"],
  globalSetup: "<rootDir>/test/global-setup.js",
  globalTeardown: "<rootDir>/test/global-teardown.js",
  testTimeout: 60000,
  maxWorkers: 2,
};
