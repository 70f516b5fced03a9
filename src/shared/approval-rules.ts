/**
 * Approval policies: ordered rules on tool names (exact or glob) that allow, ask, deny or leave a call to the
 * tool's own `requiresApproval`, then a default. Pure and deterministic: the workflow decides with it, and the
 * client, the config loader and the run's update validator check policies with the same code. A run's floor
 * (`approvalPolicyFloor`: a named agent's policy, a parent's for its sub-agents) is judged beside its own policy
 * and the stricter verdict wins (`flooredVerdict`).
 */
import type { ApprovalAction, ApprovalPolicy } from "./contracts.js";
import { isObject } from "./plain-object.js";

const ACTIONS: readonly ApprovalAction[] = ["allow", "ask", "deny", "tool"];
const MAX_RULES = 100;
const MAX_MATCH = 200;
const MAX_REASON = 1000;

const actionList = ACTIONS.map((a) => `"${a}"`).join(", ");

/** Why `value` is not an approval policy (naming the path under `field`), or undefined. */
export function approvalPolicyProblem(value: unknown, field = "approvalPolicy"): string | undefined {
  if (!isObject(value)) return `"${field}" must be an object { rules?, default? }`;
  for (const key of Object.keys(value))
    if (key !== "rules" && key !== "default") return `"${field}.${key}" is not a policy field (rules, default)`;
  if (value.default !== undefined && !ACTIONS.includes(value.default as ApprovalAction))
    return `"${field}.default" must be one of ${actionList}`;
  const rules = value.rules;
  if (rules === undefined) return undefined;
  if (!Array.isArray(rules)) return `"${field}.rules" must be an array of rules`;
  if (rules.length > MAX_RULES) return `"${field}.rules" has ${rules.length} rules; at most ${MAX_RULES}`;
  for (let i = 0; i < rules.length; i++) {
    const rule: unknown = rules[i];
    const at = `${field}.rules[${i}]`;
    if (!isObject(rule)) return `"${at}" must be an object { match, action, reason? }`;
    for (const key of Object.keys(rule))
      if (!["match", "action", "reason"].includes(key))
        return `"${at}.${key}" is not a rule field (match, action, reason)`;
    if (typeof rule.match !== "string" || rule.match.length === 0 || rule.match.length > MAX_MATCH)
      return `"${at}.match" must be a tool name or glob of 1-${MAX_MATCH} characters`;
    if (!ACTIONS.includes(rule.action as ApprovalAction)) return `"${at}.action" must be one of ${actionList}`;
    if (rule.reason !== undefined && (typeof rule.reason !== "string" || rule.reason.length > MAX_REASON))
      return `"${at}.reason" must be a string of at most ${MAX_REASON} characters`;
  }
  return undefined;
}

/** Whether tool `name` matches `pattern`: exact, or a glob (`*` any run of characters, `?` one). */
export function globMatches(pattern: string, name: string): boolean {
  // Iterative wildcard matching with backtracking to the last `*`: linear-ish, no regular expression built from input.
  let p = 0;
  let n = 0;
  let star = -1;
  let mark = 0;
  while (n < name.length) {
    if (p < pattern.length && (pattern[p] === "?" || pattern[p] === name[n])) {
      p++;
      n++;
    } else if (p < pattern.length && pattern[p] === "*") {
      star = p++;
      mark = n;
    } else if (star >= 0) {
      p = star + 1;
      n = ++mark;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === "*") p++;
  return p === pattern.length;
}

/** Most policies a run's floor holds (a named agent's, then one more per sub-agent level whose parent changed it). */
export const MAX_FLOOR_POLICIES = 32;

/** Why `value` is not a policy floor (a non-empty list of approval policies), or undefined. */
export function policyFloorProblem(value: unknown, field = "approvalPolicyFloor"): string | undefined {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_FLOOR_POLICIES)
    return `"${field}" must be a list of 1-${MAX_FLOOR_POLICIES} approval policies`;
  for (let i = 0; i < value.length; i++) {
    const problem = approvalPolicyProblem(value[i], `${field}[${i}]`);
    if (problem) return problem;
  }
  return undefined;
}

/** How strict an action is: a deny refuses, ask waits for a person, tool leaves it to the tool, allow runs. */
const STRICTNESS: Record<ApprovalAction, number> = { allow: 0, tool: 1, ask: 2, deny: 3 };

/** A verdict, and which floor policy gave it (undefined: the run's own policy). */
export interface Verdict {
  action: ApprovalAction;
  reason?: string;
  rule?: number;
  /** Set when a policy of the run's floor gave the verdict: its index there. */
  floor?: number;
}

/**
 * What a run whose floor is `floor` and whose own policy is `policy` does with a call of tool `name`: the
 * strictest verdict of them all (deny > ask > tool > allow), so no policy change loosens what a floor decides. On
 * a tie the run's own policy's verdict stands (its denial reads as before).
 */
export function flooredVerdict(
  floor: readonly ApprovalPolicy[],
  policy: ApprovalPolicy | undefined,
  name: string,
): Verdict {
  let verdict: Verdict = policyVerdict(policy, name);
  floor.forEach((p, i) => {
    const v = policyVerdict(p, name);
    if (STRICTNESS[v.action] > STRICTNESS[verdict.action]) verdict = { ...v, floor: i };
  });
  return verdict;
}

/** What the policy does with a call of tool `name`: the first matching rule's action (and reason), else the default. */
export function policyVerdict(
  policy: ApprovalPolicy | undefined,
  name: string,
): { action: ApprovalAction; reason?: string; rule?: number } {
  const rules = policy?.rules ?? [];
  for (let i = 0; i < rules.length; i++) {
    const rule = rules[i];
    if (globMatches(rule.match, name))
      return { action: rule.action, rule: i, ...(rule.reason !== undefined ? { reason: rule.reason } : {}) };
  }
  return { action: policy?.default ?? "tool" };
}

/** The error result's text for a call a policy denied: the model sees why. */
export function policyDenial(name: string, verdict: { reason?: string; rule?: number; floor?: number }): string {
  const which = verdict.rule === undefined ? "its default" : `rule ${verdict.rule + 1}`;
  const policy = verdict.floor === undefined ? "the approval policy" : "the approval policy this run cannot loosen";
  return `Tool call denied by ${policy} (${which}, tool ${name})${verdict.reason ? `: ${verdict.reason}` : "."}`;
}

/** One line for the run's details in the UI: `approval policy: 3 rules, default ask · remembered: a, b` (the floor first). */
export function policyLine(
  policy: ApprovalPolicy | undefined,
  remembered: readonly string[],
  floor: readonly ApprovalPolicy[] = [],
): string | undefined {
  const parts: string[] = [];
  if (floor.length > 0)
    parts.push(`approval floor: ${floor.length} polic${floor.length === 1 ? "y" : "ies"} (never loosened)`);
  if (policy) {
    const n = policy.rules?.length ?? 0;
    const rules = (policy.rules ?? []).map((r) => `${r.match} → ${r.action}`).join(", ");
    parts.push(
      `approval policy: ${n} rule${n === 1 ? "" : "s"}${n ? ` (${rules})` : ""}, default ${policy.default ?? "tool"}`,
    );
  }
  if (remembered.length > 0) parts.push(`approved for this run: ${remembered.join(", ")}`);
  return parts.length ? parts.join(" · ") : undefined;
}
