/** The cluster suite (`npm run test:cluster`): its own PostgreSQL and Temporal server, no dev server. */
import base from "./jest.config.js";

export default {
  ...base,
  testMatch: ["<rootDir>/test/cluster/cluster.test.ts"],
  testPathIgnorePatterns: ["/node_modules/"],
  globalSetup: undefined,
  globalTeardown: undefined,
  testTimeout: 900000,
};
