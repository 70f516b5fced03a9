/**
 * Workflow entry of a fast-failover worker: the agent's workflows and the presence workflow, so that one bundle
 * (`bundleAgentWorkflows(failoverWorkflowsPath())`) serves both its shared worker and its fleet worker.
 */
export * from "../workflows/index.js";
/** A worker's presence (src/failover/presence.ts). */
export { agentWorkerPresence } from "./presence-workflow.js";
