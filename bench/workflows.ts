/** The bench worker's workflows: the real loop and the bench-only baselines. */
export { agentRun } from "../src/workflows/agent-run.js";
export { bareTurns, naiveAgentRun } from "./naive-workflows.js";
