/** The workflow's side of the worker's metrics: facts only the loop knows (see src/telemetry/metrics.ts). */
import { proxySinks } from "@temporalio/workflow";
import type { AgentSinks } from "./definitions.js";

export const { metrics } = proxySinks<AgentSinks>();
