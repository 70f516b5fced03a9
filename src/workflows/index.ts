/** The workflows a worker registers. */
export { agentRun } from "./agent-run.js";
/** A worker's presence, for fast failover (src/failover/presence.ts). */
export { agentWorkerPresence } from "./presence.js";
