/** The workflow's side of the worker's metrics: facts only the loop knows (see src/worker/telemetry/metrics.ts). */
import { proxySinks } from "@temporalio/workflow";
import type { AgentSinks } from "../shared/definitions.js";

export const { metrics } = proxySinks<AgentSinks>();
