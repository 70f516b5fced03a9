/**
 * One import for code that needs both kinds of types: the public contracts
 * (contracts.ts: what users write against) and the workflow's wire types
 * (workflows/wire.ts: activity inputs and outputs, the continue-as-new carry).
 * Nothing is defined here; new code imports from where a type lives.
 */
export type * from "./contracts.js";
export type * from "./workflows/wire.js";
