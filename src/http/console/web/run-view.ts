/**
 * The run page: the transcript over SSE (read with fetch, so the token travels in a header), markdown for the
 * model's text, tool calls that fold open with arguments and results, per-step time and tokens, approvals inline
 * at their tool call, and one composer for steering, follow-ups and session prompts. Every action is the API's,
 * so the same validated updates as the client's; on an ended run they are disabled and the page says why.
 */
import type { AgentEvent, AgentRunState, PendingApproval, PendingClientResult } from "../../../shared/contracts.js";
import { EventDeduper } from "../../../shared/event-ids.js";
import type { WireFrame } from "../../../shared/event-wire.js";
import {
  $,
  api,
  authHeaders,
  button,
  count,
  el,
  ENDED,
  money,
  notice,
  report,
  seconds,
  showLogin,
  statusWord,
  token,
  when,
  type Settings,
} from "./common.js";
import { renderMarkdown } from "./markdown.js";

type Message = Extract<AgentEvent, { type: "message_end" }>["message"];
type AssistantMessage = Extract<Message, { role: "assistant" }>;
type TextDelta = Extract<Extract<AgentEvent, { type: "message_update" }>["assistantEvent"], { type: "text_delta" }>;
/** GET /runs/:id/timeline (src/client/timeline.ts, `RunTimeline`): ms since the epoch; open spans have no end. */
interface Timeline {
  start: number;
  end?: number;
  now: number;
  turns: {
    turn: number;
    start: number;
    end?: number;
    spans: { kind: string; label: string; start: number; end?: number }[];
  }[];
}

const POLL_MS = 2000;
const run = {
  id: "",
  tools: {} as Record<string, HTMLDetailsElement>,
  /** The assistant message streaming now. */
  current: undefined as { body: HTMLElement; meta: HTMLElement; at: number; deltas: number } | undefined,
  step: 0,
  lastAssistant: undefined as { step: number; message: AssistantMessage; meta: HTMLElement; ms?: number } | undefined,
  polling: false,
  ended: false,
};
const runApi = (path: string) => `/runs/${encodeURIComponent(run.id)}${path}`;

function textOf(content: string | readonly { type: string; text?: string }[] | undefined): string {
  return typeof content === "string" ? content : (content || []).map((c) => (c.type === "text" ? c.text : "")).join("");
}
const preview = (args: unknown) => {
  const s = JSON.stringify(args === undefined ? {} : args);
  return s.length > 120 ? `${s.slice(0, 120)}…` : s;
};

export function runView(settings: Settings, id: string) {
  run.id = id;
  const main = $("main");
  main.textContent = "";
  const head = el("section", "runhead");
  const back = el("a", "back", "← Runs", { href: "/" });
  const title = el("h2", "", id, { id: "run-title" });
  const status = el("span", "badge", undefined, { id: "status" });
  const usage = el("span", "muted", undefined, { id: "usage" });
  const ui = el("a", "ui-link", "Temporal UI ↗", { id: "ui", target: "_blank", rel: "noopener noreferrer" });
  if (settings.temporalUi) ui.href = `${settings.temporalUi}/${encodeURIComponent(id)}`;
  else {
    ui.removeAttribute("href");
    ui.title = "set JAI_TEMPORAL_UI (or run the worker against npm run temporal) to link the run's history";
    ui.className = "ui-link muted";
  }
  head.append(back, title, status, usage, ui);
  const bar = el("div", "approve-all", undefined, { id: "approve-all-bar", hidden: true });
  const log = el("div", "log", undefined, { id: "log" });
  // How the run ended: its typed result, or the reason it failed (the badge says only "failed").
  const outcome = el("section", "outcome", undefined, { id: "outcome", hidden: true });
  // Where the time went, per turn, from the run's history (GET /runs/:id/timeline): drawn while open.
  const timeline = el("details", "timeline", undefined, { id: "timeline" });
  timeline.append(el("summary", "", "Timeline"), el("div", "tl-body"));
  timeline.addEventListener("toggle", () => {
    if (timeline.open) void drawTimeline();
  });
  main.append(head, bar, timeline, log, outcome, composer());
  void stream(id);
  void refreshState();
  setInterval(() => {
    if (!run.ended && !document.hidden) void refreshState();
  }, POLL_MS);
}

function composer() {
  const c = el("section", "composer", undefined, { id: "composer" });
  const box = el("textarea", "", undefined, { id: "message", rows: 2, placeholder: "steer the run…" });
  const actions = el("div", "actions");
  const send = (path: string, what: string) => async () => {
    const text = box.value.trim();
    if (!text) return notice("Type a message first.");
    $<HTMLButtonElement>(path).disabled = true;
    try {
      notice(path === "prompt" ? "Prompt sent: the agent is answering…" : `${what} sent.`, "ok");
      box.value = "";
      await api("POST", runApi(`/${path}`), { message: text });
      if (path === "prompt") notice("");
    } catch (e) {
      if (!box.value) box.value = text;
      report(`${what} refused`, e);
    }
    void refreshState();
  };
  const prompt = Object.assign(button("Send prompt", "primary", send("prompt", "Prompt")), { id: "prompt" });
  const steer = Object.assign(button("Steer", "", send("steer", "Steering")), { id: "steer" });
  const follow = Object.assign(button("Follow up", "", send("follow-up", "Follow-up")), { id: "follow-up" });
  const cancel = button("Cancel run", "danger", async () => {
    cancel.disabled = true;
    try {
      await api("POST", runApi("/cancel"), {});
      notice("Cancellation requested.", "ok");
    } catch (e) {
      report("Cancel refused", e);
    }
    void refreshState();
  });
  cancel.id = "cancel";
  box.onkeydown = (ev) => {
    if (ev.key !== "Enter" || ev.shiftKey) return;
    ev.preventDefault();
    [prompt, steer].find((b) => !b.disabled)?.click();
  };
  actions.append(prompt, steer, follow, cancel);
  c.append(box, actions, el("p", "why muted", undefined, { id: "why" }));
  return c;
}

/** The actions a run in this state takes; each one off says why (in the page and on the button). */
function setActions(s: AgentRunState) {
  const st = s.status;
  const ended = ENDED.has(st);
  const working = st === "running" || st === "waiting_for_approval" || st === "waiting_for_client";
  const set = (id: string, on: boolean, why: string) => {
    const b = $<HTMLButtonElement>(id);
    b.disabled = !on;
    b.title = on ? "" : why;
  };
  const over = `the run has ended (${statusWord(st)}${s.stopReason ? `, ${s.stopReason}` : ""})`;
  set("prompt", st === "waiting_for_prompt", ended ? over : "prompts go to a session run once it waits for one");
  set("steer", working, ended ? over : "steering goes to a working run; this one waits for a prompt");
  set("follow-up", working, ended ? over : "a follow-up goes to a working run; this one waits for a prompt");
  set("cancel", !ended, over);
  const message = $<HTMLTextAreaElement>("message");
  message.disabled = ended;
  message.placeholder = st === "waiting_for_prompt" ? "Ask the agent…" : ended ? "" : "steer the run…";
  $("why").textContent = ended
    ? `This run has ended (${statusWord(st)}${s.stopReason ? `, stop reason ${s.stopReason}` : ""}): it takes no more messages, approvals or cancellation. Start a new run from the runs page.`
    : st === "waiting_for_prompt"
      ? "The session waits for your prompt (Enter sends it)."
      : st === "waiting_for_client"
        ? "The run waits for a client's result of the tool call marked in the transcript: submit it there."
        : st === "waiting_for_approval"
          ? "The run waits for your decision on the tool calls marked in the transcript. Steering and follow-ups are queued meanwhile."
          : "The run is working: steer it (the message comes before the next model call) or queue a follow-up (after it would stop).";
}

const TL_KINDS = {
  model: "model streaming",
  tool: "tool",
  "worker-wait": "waiting for a worker",
  retry: "retries",
  approval: "waiting for approval",
  client: "waiting for a client",
  other: "other activity",
};
const secs = (msec: number) => `${(msec / 1000).toFixed(msec < 10000 ? 2 : 1)} s`;

/** One row per turn, each span a bar placed on the run's time axis; a legend names the kinds. */
async function drawTimeline() {
  let t: Timeline;
  try {
    t = await api<Timeline>("GET", runApi("/timeline"));
  } catch (e) {
    return report("Could not read the timeline", e);
  }
  const body = $("timeline").querySelector(".tl-body")!;
  body.replaceChildren();
  const end = t.end || t.now;
  const total = Math.max(1, end - t.start);
  const legend = el("div", "tl-legend");
  for (const [kind, words] of Object.entries(TL_KINDS)) {
    const key = el("span", "tl-key");
    key.append(el("i", `tl-swatch kind-${kind}`), el("span", "", words));
    legend.append(key);
  }
  const turns = `${t.turns.length} turn${t.turns.length === 1 ? "" : "s"}`;
  body.append(
    el("p", "muted", `Run: ${secs(end - t.start)}${t.end ? "" : " so far"}, ${turns} (from the run's history)`),
  );
  body.append(legend);
  for (const turn of t.turns) {
    const row = el("div", "tl-row");
    row.dataset.turn = String(turn.turn);
    row.append(el("span", "tl-label", `turn ${turn.turn} · ${secs((turn.end || t.now) - turn.start)}`));
    const track = el("div", "tl-track");
    turn.spans.forEach((s, i) => {
      const to = s.end || t.now;
      const bar = el("span", `tl-bar kind-${s.kind}`, undefined, {
        title: `${s.label}: ${secs(to - s.start)}${s.end ? "" : " (going on)"}`,
      });
      bar.style.left = `${((s.start - t.start) / total) * 100}%`;
      bar.style.width = `${Math.max(0.4, ((to - s.start) / total) * 100)}%`;
      bar.style.top = `${(i % 4) * 7}px`;
      Object.assign(bar.dataset, { kind: s.kind, start: String(s.start), end: String(to), label: s.label });
      track.append(bar);
    });
    row.append(track);
    body.append(row);
  }
}

/** The typed result (run input "output") and, for an ended run, the reason it ended on an error. */
function showOutcome(s: AgentRunState) {
  const out = $("outcome");
  out.replaceChildren();
  if (s.output !== undefined)
    out.append(el("h3", "", "Typed result"), el("pre", "result", JSON.stringify(s.output, null, 2)));
  if (ENDED.has(s.status) && s.errorMessage) out.append(el("h3", "", "Why it ended"), el("p", "err", s.errorMessage));
  out.hidden = out.childElementCount === 0;
}

async function refreshState() {
  if (run.polling) return;
  run.polling = true;
  try {
    const s = await api<AgentRunState>("GET", runApi(""));
    const badge = $("status");
    badge.textContent = statusWord(s.status);
    badge.className = `badge status-${s.status}`;
    $("usage").textContent =
      `turn ${s.turn}` + (s.usage ? ` · ${count(s.usage.totalTokens)} tokens · ${money(s.usage.cost?.total)}` : "");
    setActions(s);
    showOutcome(s);
    if ($<HTMLDetailsElement>("timeline").open) void drawTimeline();
    showApprovals(s.pendingApprovals || [], ENDED.has(s.status));
    showClientWaits(s.pendingClientResults || [], ENDED.has(s.status));
    if (ENDED.has(s.status)) {
      run.ended = true;
      document.body.dataset.ended = "1";
    }
  } catch (e) {
    report("Could not read the run", e);
  } finally {
    run.polling = false;
    // How many reads of the state this page finished: a test waits on it instead of on time.
    document.body.dataset.stateReads = String(Number(document.body.dataset.stateReads ?? 0) + 1);
  }
}

/** A tool call's row: made by its first event, or by its approval when that comes first. */
function toolRow(toolCallId: string, toolName: string, args: unknown) {
  let d = run.tools[toolCallId];
  if (d) return d;
  d = el("details", "tool");
  d.dataset.toolCallId = toolCallId;
  const summary = el("summary");
  summary.append(el("span", "icon", "→"), " ", el("b", "name", toolName), " ", el("code", "preview", preview(args)));
  summary.append(el("span", "took muted", ""));
  d.append(
    summary,
    el("div", "label", "arguments"),
    el("pre", "args", JSON.stringify(args === undefined ? {} : args, null, 2)),
  );
  run.tools[toolCallId] = d;
  $("log").append(d);
  return d;
}

/** Removes the boxes (`.decision`, `.client-result`) of calls that no longer wait, or all of them on an ended run. */
function dropBoxes(selector: string, waiting: Set<string>, ended: boolean) {
  for (const box of document.querySelectorAll<HTMLElement>(selector))
    if (!waiting.has(box.dataset.toolCallId!) || ended) box.remove();
}

function showApprovals(pending: PendingApproval[], ended: boolean) {
  const waiting = new Set(pending.map((a) => a.toolCallId));
  dropBoxes(".decision", waiting, ended);
  for (const a of pending) {
    const d = toolRow(a.toolCallId, a.toolName, a.args);
    d.classList.add("waiting");
    if (d.querySelector(".decision")) continue;
    d.open = true;
    // "decision", not only "approval": a client-result box is styled as one, and must not be dropped as one.
    const box = el("div", "approval decision");
    box.dataset.toolCallId = a.toolCallId;
    const reason = el("input", "reason", undefined, {
      placeholder: "reason for denying (the model sees it)",
      maxLength: 2000,
    });
    const enable = (on: boolean) => box.querySelectorAll("button").forEach((b) => (b.disabled = !on));
    const decide = (path: "approve" | "deny", body: () => object) => async () => {
      enable(false);
      try {
        await api("POST", runApi(`/${path}`), body());
        notice("");
      } catch (e) {
        report(`${path === "approve" ? "Approve" : "Deny"} refused`, e);
        enable(true);
      }
      void refreshState();
    };
    const denial = () => reason.value.trim();
    box.append(
      el("b", "", "Waits for your decision"),
      " ",
      button(
        "Approve",
        "approve primary",
        decide("approve", () => ({ toolCallId: a.toolCallId })),
      ),
      " ",
      reason,
      " ",
      button(
        "Deny",
        "deny danger",
        decide("deny", () =>
          denial() ? { toolCallId: a.toolCallId, reason: denial() } : { toolCallId: a.toolCallId },
        ),
      ),
      el("span", "muted since", ` since ${when(a.since)}`),
    );
    d.append(box);
  }
  for (const d of document.querySelectorAll<HTMLElement>("details.tool.waiting"))
    if (!waiting.has(d.dataset.toolCallId!)) d.classList.remove("waiting");
  const bar = $("approve-all-bar");
  bar.textContent = "";
  bar.hidden = pending.length < 2 || ended;
  if (bar.hidden) return;
  const all = button(`Approve all ${pending.length}`, "primary", async () => {
    all.disabled = true;
    // One approve update per call, as the client API and the CLI's --all send them.
    for (const a of pending) {
      try {
        await api("POST", runApi("/approve"), { toolCallId: a.toolCallId });
      } catch (e) {
        report(`Approve ${a.toolName} refused`, e);
      }
    }
    void refreshState();
  });
  all.id = "approve-all";
  bar.append(el("span", "", `${pending.length} tool calls wait for your decision `), all);
}

/** A "Submit result" box at each call waiting for a client (issue #41): JSON, or else the text as a string. */
function showClientWaits(pending: PendingClientResult[], ended: boolean) {
  dropBoxes(".client-result", new Set(pending.map((w) => w.toolCallId)), ended);
  if (ended) return;
  for (const w of pending) {
    const d = toolRow(w.toolCallId, w.toolName, w.args);
    if (d.querySelector(".client-result")) continue;
    d.open = true;
    const box = el("div", "approval client-result");
    box.dataset.toolCallId = w.toolCallId;
    const input = el("textarea", "result-input", undefined, {
      rows: 2,
      placeholder: "the result: JSON, or plain text (sent as a string)",
    });
    const failed = el("input", "is-error", undefined, { type: "checkbox" });
    const errorLabel = el("label", "muted");
    errorLabel.append(failed, " the client's tool failed");
    const submit = button("Submit result", "submit-result primary", async () => {
      const text = input.value.trim();
      let result: unknown = text;
      try {
        result = JSON.parse(text);
      } catch {
        /* plain text: a string */
      }
      submit.disabled = true;
      const body = { toolCallId: w.toolCallId, result, ...(failed.checked ? { isError: true } : {}) };
      try {
        await api("POST", runApi("/tool-result"), body);
        notice("");
      } catch (e) {
        report("Result refused", e);
        submit.disabled = false;
      }
      void refreshState();
    });
    box.append(el("b", "", "Waits for a client's result"), " ", input, " ", errorLabel, " ", submit);
    box.append(el("span", "muted since", ` since ${when(w.since)}`));
    d.append(box);
  }
}

function stepMeta(step: number, m: AssistantMessage, ms: number | undefined) {
  const u: Partial<AssistantMessage["usage"]> = m.usage || {};
  const parts = [`step ${step}`];
  if (ms !== undefined) parts.push(seconds(ms));
  if (u.totalTokens !== undefined)
    parts.push(`${count(u.totalTokens)} tokens (${count(u.input)} in, ${count(u.output)} out)`);
  if (u.cost?.total) parts.push(money(u.cost.total));
  if (m.model) parts.push(m.model);
  return parts.join(" · ");
}

/** A step replayed in one burst has no measured time: its message's timestamp to the next message's tells it. */
function settleLastStep(nextTimestamp: number | undefined) {
  const last = run.lastAssistant;
  if (!last || last.ms !== undefined || !nextTimestamp || !last.message.timestamp) return;
  last.ms = Math.max(0, nextTimestamp - last.message.timestamp);
  last.meta.textContent = stepMeta(last.step, last.message, last.ms);
}

/** Each event is shown once: a retried workflow task emits its events again, with the same eventId. */
let seenEvents = new EventDeduper();

/** The events start over from the run's first (the server's log dropped some this page had not read). */
function restartView() {
  $("log").replaceChildren();
  Object.assign(run, { tools: {}, current: undefined, step: 0, lastAssistant: undefined });
  seenEvents = new EventDeduper();
}

function onEvent(e: WireFrame) {
  const log = $("log");
  switch (e.type) {
    case "message_start":
      settleLastStep(e.message.timestamp);
      if (e.message.role === "assistant") {
        const step = el("div", "step");
        const meta = el("div", "step-meta muted", `step ${run.step + 1} · streaming…`);
        const body = el("div", "msg assistant");
        body.dataset.streaming = "1";
        step.append(meta, body);
        log.append(step);
        run.current = { body, meta, at: performance.now(), deltas: 0 };
      } else if (e.message.role === "user") log.append(el("div", "msg user", textOf(e.message.content)));
      break;
    case "message_update":
      if (run.current && e.assistantEvent.type === "text_delta") {
        run.current.body.textContent += (e.assistantEvent as TextDelta).delta;
        run.current.deltas++;
        document.body.dataset.deltas = String(Number(document.body.dataset.deltas || 0) + 1);
      }
      break;
    case "message_end":
      if (e.message.role === "assistant" && run.current) {
        const c = run.current;
        run.current = undefined;
        run.step++;
        // Markdown once the text is whole (a half-streamed construct would flicker); escaped first, see renderMarkdown.
        c.body.innerHTML = renderMarkdown(textOf(e.message.content));
        c.body.classList.add("md");
        delete c.body.dataset.streaming;
        if (e.message.stopReason === "error" || e.message.errorMessage)
          c.body.append(el("div", "err", e.message.errorMessage || "error"));
        const measured = performance.now() - c.at;
        const ms = c.deltas > 0 && measured >= 20 ? measured : undefined;
        c.meta.textContent = stepMeta(run.step, e.message, ms);
        run.lastAssistant = { step: run.step, message: e.message, meta: c.meta, ms };
      }
      break;
    case "tool_execution_start":
      toolRow(e.toolCallId, e.toolName, e.args).dataset.startedAt = String(performance.now());
      void refreshState();
      break;
    case "tool_execution_update": {
      const d = run.tools[e.toolCallId];
      if (!d) break;
      const p = d.querySelector(".partial") || d.appendChild(el("pre", "partial"));
      p.textContent = textOf(e.partial?.content);
      break;
    }
    case "tool_execution_end": {
      const d = toolRow(e.toolCallId, e.toolName, undefined);
      d.querySelector(".partial")?.remove();
      d.classList.toggle("error", !!e.isError);
      d.querySelector(".icon")!.textContent = e.isError ? "✗" : "✓";
      const took = performance.now() - Number(d.dataset.startedAt || performance.now());
      if (took >= 20) d.querySelector(".took")!.textContent = ` · ${seconds(took)}`;
      const result = el("pre", `result${e.isError ? " err" : ""}`, textOf(e.result?.content));
      d.append(el("div", "label", e.isError ? "error" : "result"), result);
      void refreshState();
      break;
    }
    case "turn_end":
    case "agent_end":
      void refreshState();
      break;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Server-Sent Events over fetch (EventSource cannot send a header): frames parsed here, resumed with Last-Event-ID. */
async function stream(id: string) {
  let last = "";
  let failures = 0;
  for (;;) {
    let res: Response;
    try {
      res = await fetch(`/runs/${encodeURIComponent(id)}/events`, {
        headers: { ...authHeaders(), accept: "text/event-stream", ...(last ? { "last-event-id": last } : {}) },
      });
    } catch {
      await sleep(Math.min(5000, 250 * 2 ** ++failures));
      continue;
    }
    if (!res.ok || !res.body) {
      const data = (await res.json().catch(() => ({}))) as { error?: string };
      if (res.status === 401) return showLogin(token() ? "The server refused that token." : "");
      notice(`Events: ${data.error || res.statusText}`);
      if (res.status !== 429 && res.status < 500) return; // 429 (too many streams) and server errors: try again
      await sleep(5000);
      continue;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        failures = 0;
        buffer += value.replace(/\r\n?/g, "\n");
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = "message";
          let data = "";
          let eventId: string | undefined;
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "id") eventId = text;
            else if (field === "event") event = text;
            else if (field === "data") data += (data ? "\n" : "") + text;
          }
          if (eventId !== undefined) last = eventId;
          if (event === "restart")
            restartView(); // the server lost events we had not read: it starts over
          else if (event === "agent") {
            const e = JSON.parse(data) as WireFrame;
            if (!seenEvents.repeat(e.eventId)) onEvent(e);
          } else if (event === "end") {
            // A refresh in flight may have read the run before it ended: the page says "ended" after one that did not.
            while (run.polling) await sleep(50);
            await refreshState();
            document.body.dataset.ended = "1";
            return;
          }
        }
      }
    } catch {
      /* the connection dropped: resume below */
    }
    // The stream ended without "end" (the server went away mid-run): resume after the last event.
    await sleep(Math.min(5000, 250 * 2 ** ++failures));
  }
}
