/**
 * Approval policies (input `approvalPolicy`, and `approvalPolicyFloor`, the policies a named agent's run can never
 * loosen; docs/approvals.md): rules in ../approval-policy.ts, each call's verdict in the tool batch (tool-calls.ts,
 * behind APPROVAL_POLICY_PATCH where it decides). Here: the fields' checks, the policy's start, snapshot and carry.
 * The floor is patched (POLICY_FLOOR_PATCH), asked first thing when the input has one.
 */
import { patched } from "@temporalio/workflow";
import { featureInput } from "../../shared/feature-inputs.js";
import { POLICY_FLOOR_PATCH } from "../patches.js";
import type { RunFeature } from "./feature.js";

export const approvalPolicyFeature: RunFeature = {
  ...featureInput("approvalPolicy"),
  open(input) {
    // A continued run's input is its chain's first, whose floor was taken then.
    const floored =
      input.approvalPolicyFloor !== undefined && (input.continued !== undefined || patched(POLICY_FLOOR_PATCH));
    return {
      // A run recorded before floors treats the field as unknown.
      ...(floored ? {} : { unknownFields: ["approvalPolicyFloor"] }),
      start: (state, input) =>
        state.tools.startApprovals(
          input.continued?.approvals,
          input.approvalPolicy,
          floored ? input.approvalPolicyFloor : undefined,
        ),
      snapshot: ({ tools }) => ({
        ...(tools.policy !== undefined ? { approvalPolicy: tools.policy } : {}),
        ...(tools.remembered.length > 0 ? { rememberedTools: [...tools.remembered] } : {}),
        ...(tools.floor.length > 0 ? { approvalPolicyFloor: [...tools.floor] } : {}),
      }),
      carry: ({ tools }) => (tools.approvalsCarry() ? { approvals: tools.approvalsCarry() } : {}),
      // The child can loosen nothing its parent could not: the parent's floor and policy are the child's floor, so
      // a tool the parent denies is denied in the child, whatever its tools, policy updates or remembered approvals.
      childInput: ({ state }) => {
        const floor = state.tools.childFloor();
        return floor ? { approvalPolicyFloor: floor } : {};
      },
    };
  },
};
