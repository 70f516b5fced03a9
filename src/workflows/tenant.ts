/**
 * A sub-agent's child carries its parent's tenant (docs/tenants.md). The fairness key needs nothing here: the
 * server merges the parent's priority into the child's start (and into every activity's dispatch), see
 * priorities.Merge in temporal's transfer_queue_active_task_executor.go (v1.29.1). The AgentTenant search
 * attribute is not inherited, so the child's start names it; only when the parent has it, which proves the
 * namespace has the attribute (a start naming an unregistered attribute would fail the workflow task).
 */
import { workflowInfo, type ChildWorkflowOptions } from "@temporalio/workflow";
import { AgentTenant } from "../shared/search-attributes.js";

/** Options to spread into a sub-agent's child start: its parent's AgentTenant, if the parent has one. */
export function childTenantOptions(): Pick<ChildWorkflowOptions, "typedSearchAttributes"> {
  const tenant = workflowInfo().typedSearchAttributes.get(AgentTenant);
  return tenant ? { typedSearchAttributes: [{ key: AgentTenant, value: tenant }] } : {};
}
