/**
 * The run console: one plain page (no framework) that follows a run over SSE (read with fetch, so the token
 * travels in the Authorization header) and acts on it through the API.
 */
export function consolePage(options: { temporalUi: string }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>jai-agent run console</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:0;background:#f6f7f9;color:#1b1f24}
header{background:#1b1f24;color:#fff;padding:10px 16px;display:flex;gap:12px;align-items:center;flex-wrap:wrap}
header input{width:320px;padding:4px} header a{color:#9cd0ff} main{max-width:900px;margin:0 auto;padding:16px}
.msg{background:#fff;border:1px solid #d8dde3;border-radius:6px;padding:10px 12px;margin:10px 0;white-space:pre-wrap}
.user{border-left:4px solid #3b82f6} .assistant{border-left:4px solid #10b981} .err{color:#b91c1c}
details.tool{background:#fff;border:1px solid #d8dde3;border-left:4px solid #f59e0b;border-radius:6px;margin:8px 0;padding:6px 10px}
details.tool pre{white-space:pre-wrap;margin:4px 0;background:#f3f4f6;padding:6px}
#approvals .approval{background:#fff7ed;border:1px solid #fdba74;border-radius:6px;padding:8px;margin:8px 0}
#status{font-weight:600} #usage{color:#555} footer{display:flex;gap:8px;margin-top:12px} footer input{flex:1;padding:6px}
button{padding:4px 10px;cursor:pointer}
</style></head><body>
<header><b>jai-agent</b><form id="pick"><input id="runId" placeholder="workflow id"><button>Follow</button></form>
<span id="status">idle</span><span id="usage"></span><a id="ui" target="_blank" hidden>Temporal UI</a></header>
<main><div id="approvals"></div><div id="log"></div>
<footer><input id="steerText" placeholder="steer the run…"><button id="steer">Steer</button><button id="cancel">Cancel</button></footer></main>
<script>
const TEMPORAL_UI = ${JSON.stringify(options.temporalUi)};
// The token comes in the URL fragment (never sent to a server, never in its logs): kept in this tab's
// sessionStorage, then taken out of the address bar. Every request sends it as Authorization: Bearer.
const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
if (fromHash) { sessionStorage.setItem("jai-token", fromHash); history.replaceState(null, "", location.pathname); }
const token = sessionStorage.getItem("jai-token") || "";
const $ = (id) => document.getElementById(id);
const auth = token ? { authorization: "Bearer " + token } : {};
const NO_TOKEN = "401: open the console with its token, as the worker printed it (…/#token=…)";
let runId = (location.pathname.match(/^\\/runs\\/([^/]+)\\/console$/) || [])[1];
runId = runId ? decodeURIComponent(runId) : "";
let source, current, tools = {};
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
function textOf(content) { return typeof content === "string" ? content : content.filter((c) => c.type === "text").map((c) => c.text).join(""); }
async function api(path, body) {
  const res = await fetch("/runs/" + encodeURIComponent(runId) + path, { method: body ? "POST" : "GET", headers: { ...auth, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(res.status === 401 ? NO_TOKEN : data.error || res.statusText);
  return data;
}
async function refreshState() {
  try {
    const s = await api("");
    $("status").textContent = s.status + (s.phase && s.phase !== "done" ? " · " + s.phase : "");
    $("usage").textContent = s.usage ? s.usage.totalTokens + " tokens · $" + s.usage.cost.total.toFixed(4) : "";
    const box = $("approvals"); box.textContent = "";
    for (const a of s.pendingApprovals || []) {
      const d = el("div", "approval"); d.dataset.toolCallId = a.toolCallId;
      d.append(el("b", "", "Waiting for approval: "), el("code", "", a.toolName + " " + JSON.stringify(a.args)), " ");
      const yes = el("button", "approve", "Approve"); yes.onclick = () => api("/approve", { toolCallId: a.toolCallId }).then(refreshState, alert);
      const no = el("button", "deny", "Deny"); no.onclick = () => api("/deny", { toolCallId: a.toolCallId, reason: "denied in the console" }).then(refreshState, alert);
      d.append(yes, " ", no); box.append(d);
    }
    return s;
  } catch (e) { $("status").textContent = String(e.message || e); }
}
function onEvent(e) {
  const log = $("log");
  switch (e.type) {
    case "message_start":
      if (e.message.role === "assistant") { current = el("div", "msg assistant"); current.dataset.streaming = "1"; log.append(current); }
      else if (e.message.role === "user") log.append(el("div", "msg user", textOf(e.message.content)));
      break;
    case "message_update":
      if (current && e.assistantEvent.type === "text_delta") { current.textContent += e.assistantEvent.delta; document.body.dataset.deltas = String(Number(document.body.dataset.deltas || 0) + 1); }
      break;
    case "message_end":
      if (e.message.role === "assistant" && current) {
        current.textContent = textOf(e.message.content); delete current.dataset.streaming;
        if (e.message.stopReason === "error") current.append(el("div", "err", e.message.errorMessage || "error"));
        current = undefined;
      }
      break;
    case "tool_execution_start": {
      const d = el("details", "tool"); d.dataset.toolCallId = e.toolCallId;
      d.append(el("summary", "", "→ " + e.toolName + " " + JSON.stringify(e.args).slice(0, 120)), el("pre", "args", JSON.stringify(e.args, null, 2)));
      tools[e.toolCallId] = d; log.append(d); refreshState();
      break;
    }
    case "tool_execution_update": {
      const d = tools[e.toolCallId]; if (d) { let p = d.querySelector(".partial") || d.appendChild(el("pre", "partial")); p.textContent = textOf(e.partial.content); }
      break;
    }
    case "tool_execution_end": {
      const d = tools[e.toolCallId]; if (!d) break;
      d.querySelector(".partial")?.remove();
      d.querySelector("summary").textContent = (e.isError ? "✗ " : "✓ ") + e.toolName + " " + JSON.stringify(d.querySelector(".args") ? JSON.parse(d.querySelector(".args").textContent) : {}).slice(0, 120);
      d.append(el("pre", "result" + (e.isError ? " err" : ""), textOf(e.result.content)));
      refreshState();
      break;
    }
    case "turn_end": case "agent_end": refreshState(); break;
  }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** Server-Sent Events over fetch (EventSource cannot send a header): frames parsed here, resumed with Last-Event-ID. */
async function stream(id, signal) {
  let last = "", failures = 0;
  while (!signal.aborted) {
    let res;
    try {
      res = await fetch("/runs/" + encodeURIComponent(id) + "/events", { headers: { ...auth, accept: "text/event-stream", ...(last ? { "last-event-id": last } : {}) }, signal });
    } catch (e) { if (signal.aborted) return; await sleep(Math.min(5000, 250 * 2 ** ++failures)); continue; }
    if (!res.ok || !res.body) {
      const data = await res.json().catch(() => ({}));
      $("status").textContent = res.status === 401 ? NO_TOKEN : data.error || res.statusText;
      if (res.status !== 429 && res.status < 500) return; // 429 (too many streams) and server errors: try again
      await sleep(5000); continue;
    }
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        failures = 0;
        buffer += value.replace(/\\r\\n?/g, "\\n");
        let end;
        while ((end = buffer.indexOf("\\n\\n")) >= 0) {
          const block = buffer.slice(0, end); buffer = buffer.slice(end + 2);
          let event = "message", data = "", eventId;
          for (const line of block.split("\\n")) {
            if (line.startsWith(":")) continue;
            const colon = line.indexOf(":");
            const field = colon < 0 ? line : line.slice(0, colon);
            const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "id") eventId = text; else if (field === "event") event = text; else if (field === "data") data += (data ? "\\n" : "") + text;
          }
          if (eventId !== undefined) last = eventId;
          if (event === "agent") onEvent(JSON.parse(data));
          else if (event === "end") { refreshState().then(() => { document.body.dataset.ended = "1"; }); return; }
        }
      }
    } catch (e) { if (signal.aborted) return; }
    // The stream ended without "end" (the server went away mid-run): resume after the last event.
    await sleep(Math.min(5000, 250 * 2 ** ++failures));
  }
}
function follow(id) {
  runId = id; $("runId").value = id; $("log").textContent = ""; tools = {};
  if (source) source.abort();
  if (TEMPORAL_UI) { $("ui").href = TEMPORAL_UI + "/" + encodeURIComponent(id); $("ui").hidden = false; }
  source = new AbortController();
  stream(id, source.signal);
  refreshState();
}
$("pick").onsubmit = (ev) => { ev.preventDefault(); const id = $("runId").value.trim(); if (id) { history.replaceState(null, "", "/runs/" + encodeURIComponent(id) + "/console"); follow(id); } };
$("steer").onclick = () => { const t = $("steerText").value.trim(); if (t) api("/steer", { message: t }).then(() => { $("steerText").value = ""; }, (e) => alert(e.message)); };
$("cancel").onclick = () => api("/cancel", {}).then(refreshState, (e) => alert(e.message));
if (runId) follow(runId);
</script></body></html>`;
}
