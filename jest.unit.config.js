/** The unit layer (`npm run test:unit`): test/unit only, no Temporal server started or needed. */
import base from "./jest.config.js";

export default {
  ...base,
  testMatch: ["<rootDir>/test/unit/**/*.test.ts"],
  globalSetup: undefined,
  globalTeardown: undefined,
  reporters: ["default"],
};
