/** `jai-agent/testing`: a local Temporal dev server (the Temporal CLI's) for tests and demos, and history replay. */
export { startDevServer, findTemporalCli, type DevServer, type DevServerOptions } from "../node/dev-server.js";
export { readHistoryFile, replayHistory, replayOptions, type ReplayOutcome } from "../worker/replay.js";
