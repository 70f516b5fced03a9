/** The workflows a worker registers. */
export { agentRun } from "./agent-run.js";
