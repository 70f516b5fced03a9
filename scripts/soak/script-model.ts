/**
 * The soak's scripted model, as pure functions shared by the worker (which answers with them) and the driver
 * (which computes every run's expected transcript with them). No imports: the worker config transpiles this file
 * next to itself.
 *
 * A prompt, follow-up or session prompt is `SOAK {"id":…,"steps":[…]}`; the model answers from the context alone
 * (a retried call gets the same answer): its step is the number of assistant messages since the last script
 * message, steering messages after its last answer are quoted in the next one, and tool results are never read
 * (so an interrupted `ledger_once` call changes nothing that follows).
 */

/** One assistant turn of a script: which ledger tool it calls, with which keys. */
export type Step =
  | { par: string[] } // ledger_write calls in one batch, run in parallel
  | { seq: string[] } // ledger_seq calls in one batch, run one after the other
  | { fast: string[] } // ledger_fast calls (local activities)
  | { approve: string } // one ledger_guarded call, which waits for approval
  | { once: string } // one ledger_once call (idempotent: false)
  | { sub: string[] } // one soak_helper call: a sub-agent (child workflow) whose script is one ledger_write batch
  | { mcp: string[] }; // soakmcp__lookup calls in one batch: a tool served by the soak's MCP server (Streamable HTTP)

export interface Script {
  id: string;
  steps: Step[];
}

export const SCRIPT_PREFIX = "SOAK ";
export const SOAK_TOOLS = {
  par: "ledger_write",
  seq: "ledger_seq",
  fast: "ledger_fast",
  approve: "ledger_guarded",
  once: "ledger_once",
  sub: "soak_helper",
  mcp: "soakmcp__lookup",
} as const;

/**
 * The soak's MCP server as the worker config names it, its one tool (the model sees `<server>__<tool>`), and the
 * header each worker sends its pid in (so the soak can match a repeated call with the faults).
 */
export const SOAK_MCP = { server: "soakmcp", tool: "lookup", pidHeader: "x-soak-worker-pid" } as const;

export const scriptText = (script: Script) => `${SCRIPT_PREFIX}${JSON.stringify(script)}`;

/** A message as the model and the checks see it. */
export type Msg =
  | { role: "user"; text: string }
  | { role: "assistant"; stopReason: string; text: string; calls: Call[] }
  | { role: "toolResult"; tool: string; isError: boolean; text: string };

export interface Call {
  name: string;
  id: string;
  /** `{ key }` for the ledger tools, `{ prompt }` (a script) for the sub-agent. */
  args: { key: string; prompt?: string };
}

/** What a ledger tool answers for a key (the same on every attempt and every worker). */
export const toolAnswer = (key: string) => `ok ${key}`;

/** FNV-1a of a string, hex: a digest without imports (this file is transpiled alone for the worker). */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, "0");
}

/**
 * What the soak's MCP server answers for a key: computed by the server, and by the driver for the expected
 * transcript. Non-ASCII, quotes and a new line on purpose, so a result mangled on its way (MCP content mapping,
 * the payload codec) differs from it.
 */
export const mcpAnswer = (key: string) => `mcp ${key} #${fnv1a(key)} «ü» "q"\nend`;

/** A call's result in an undisturbed run: the ledger tool's or MCP server's answer, or the sub-agent's final answer. */
function expectedResult(call: Call): string {
  if (call.name === SOAK_TOOLS.mcp) return mcpAnswer(call.args.key);
  if (call.name !== SOAK_TOOLS.sub) return toolAnswer(call.args.key);
  const child = JSON.parse(call.args.prompt!.slice(SCRIPT_PREFIX.length)) as Script;
  return `${child.id} done after ${child.steps.length} steps`;
}

function stepCalls(script: Script, step: number): Call[] {
  const s = script.steps[step];
  const id = (k: number) => `${script.id}-${step}-${k}`;
  const key = (k: string) => `${script.id}.${k}`;
  if ("par" in s) return s.par.map((k, i) => ({ name: SOAK_TOOLS.par, id: id(i), args: { key: key(k) } }));
  if ("seq" in s) return s.seq.map((k, i) => ({ name: SOAK_TOOLS.seq, id: id(i), args: { key: key(k) } }));
  if ("fast" in s) return s.fast.map((k, i) => ({ name: SOAK_TOOLS.fast, id: id(i), args: { key: key(k) } }));
  if ("mcp" in s) return s.mcp.map((k, i) => ({ name: SOAK_TOOLS.mcp, id: id(i), args: { key: key(k) } }));
  if ("approve" in s) return [{ name: SOAK_TOOLS.approve, id: id(0), args: { key: key(s.approve) } }];
  if ("sub" in s) {
    const child: Script = { id: `${script.id}.c${step}`, steps: [{ par: s.sub }] };
    return [{ name: SOAK_TOOLS.sub, id: id(0), args: { key: child.id, prompt: scriptText(child) } }];
  }
  return [{ name: SOAK_TOOLS.once, id: id(0), args: { key: key(s.once) } }];
}

/** The model's next answer to `messages` (undefined: no script in them). */
export function plan(messages: Msg[]): { text: string; calls: Call[] } | undefined {
  let start = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "user" && m.text.startsWith(SCRIPT_PREFIX)) {
      start = i;
      break;
    }
  }
  if (start < 0) return undefined;
  const first = messages[start];
  const script = JSON.parse((first as { text: string }).text.slice(SCRIPT_PREFIX.length)) as Script;
  const after = messages.slice(start + 1);
  const step = after.filter((m) => m.role === "assistant").length;
  let lastAnswer = -1;
  after.forEach((m, i) => (m.role === "assistant" ? (lastAnswer = i) : undefined));
  const steers = lastAnswer < 0 ? [] : after.slice(lastAnswer + 1).flatMap((m) => (m.role === "user" ? [m.text] : []));
  const steered = steers.length > 0 ? ` (steered: ${steers.join(" | ")})` : "";
  if (step < script.steps.length)
    return { text: `${script.id} step ${step + 1}/${script.steps.length}${steered}`, calls: stepCalls(script, step) };
  return { text: `${script.id} done after ${script.steps.length} steps${steered}`, calls: [] };
}

/** A prompt's part of the expected transcript: its script, and a steering message taken up after a step's results. */
export interface Segment {
  script: Script;
  steer?: { afterStep: number; text: string; /** the waiting call's result: steering skips it */ skipped?: string };
}

/** The transcript an undisturbed run of these segments has, in order. */
export function expectedTranscript(segments: Segment[]): Msg[] {
  const out: Msg[] = [];
  for (const seg of segments) {
    out.push({ role: "user", text: scriptText(seg.script) });
    for (let step = 0; ; step++) {
      const next = plan(out)!;
      out.push({
        role: "assistant",
        stopReason: next.calls.length ? "toolUse" : "stop",
        text: next.text,
        calls: next.calls,
      });
      if (next.calls.length === 0) break;
      const skipped = seg.steer?.afterStep === step ? seg.steer.skipped : undefined;
      for (const c of next.calls)
        out.push(
          skipped
            ? { role: "toolResult", tool: c.name, isError: true, text: skipped }
            : { role: "toolResult", tool: c.name, isError: false, text: expectedResult(c) },
        );
      if (seg.steer?.afterStep === step) out.push({ role: "user", text: seg.steer.text });
    }
  }
  return out;
}

interface ContentBlock {
  type: string;
  text?: string;
  name?: string;
  id?: string;
  arguments?: Record<string, unknown>;
}

/** A provider message (context or transcript) as the model and the checks see it. */
export function toMsg(m: {
  role: string;
  content: unknown;
  stopReason?: string;
  toolName?: string;
  isError?: boolean;
}): Msg {
  const blocks: ContentBlock[] =
    typeof m.content === "string" ? [{ type: "text", text: m.content }] : ((m.content ?? []) as ContentBlock[]);
  const text = blocks.map((b) => (b.type === "text" ? (b.text ?? "") : "")).join("");
  if (m.role === "assistant")
    return {
      role: "assistant",
      stopReason: m.stopReason ?? "?",
      text,
      calls: blocks
        .filter((b) => b.type === "toolCall")
        .map((b) => ({ name: b.name ?? "?", id: b.id ?? "?", args: b.arguments as { key: string } })),
    };
  if (m.role === "toolResult") return { role: "toolResult", tool: m.toolName ?? "?", isError: !!m.isError, text };
  return { role: "user", text };
}

/** JSON with sorted keys (undefined dropped), so the worker and the driver digest a context the same way. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonical(v))).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .filter((k) => (value as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

/** A context as history records it: tool results' details are for logs and UI, never sent to the model. */
export function withoutDetails<T extends { role: string }>(messages: T[]): T[] {
  return messages.map((m) => {
    if (m.role !== "toolResult" || !("details" in m)) return m;
    const { details: _details, ...rest } = m as T & { details?: unknown };
    return rest as T;
  });
}
