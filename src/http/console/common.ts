/**
 * What both console pages share, as browser source: the token (taken from a `#token=` fragment or the login
 * form, kept in this tab's sessionStorage, sent only as `Authorization: Bearer`), API calls whose failures
 * show in the page (never an alert()), and small DOM helpers that set text, never HTML.
 */
export const COMMON_JS = String.raw`
"use strict";
const TOKEN_KEY = "jai-token";
// A token in the fragment (as the worker prints the console's URL) never reaches a server or its logs: kept
// for this tab, then taken out of the address bar so it is not in the history or a copied link either.
{
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromHash) { sessionStorage.setItem(TOKEN_KEY, fromHash); history.replaceState(null, "", location.pathname + location.search); }
}
const token = () => sessionStorage.getItem(TOKEN_KEY) || "";
const authHeaders = () => (token() ? { authorization: "Bearer " + token() } : {});
const $ = (id) => document.getElementById(id);
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function button(text, cls, onclick) { const b = el("button", cls, text); b.type = "button"; if (onclick) b.onclick = onclick; return b; }
class ApiError extends Error { constructor(status, message) { super(message); this.status = status; } }
async function api(method, path, body) {
  const headers = { ...authHeaders(), ...(body !== undefined ? { "content-type": "application/json" } : {}) };
  const res = await fetch(path, { method, headers, body: body !== undefined ? JSON.stringify(body) : undefined });
  const data = await res.json().catch(() => ({}));
  if (res.status === 401) { showLogin(token() ? "The server refused that token." : ""); throw new ApiError(401, "sign in with the server's token"); }
  if (!res.ok) throw new ApiError(res.status, data.error || res.statusText);
  return data;
}
/** One line at the top of the page: what went wrong (or right), in words, instead of a browser alert. */
function notice(text, kind) {
  const n = $("notice");
  n.textContent = text || "";
  n.className = text ? "notice " + (kind || "error") : "notice";
}
function showLogin(why) {
  $("login").hidden = false;
  $("login-why").textContent = why || "";
  $("main").hidden = true;
  $("login-token").focus();
}
function setupLogin(onSignedIn) {
  // The form never submits anywhere (CSP form-action 'none' too): the token goes to sessionStorage only.
  $("login").onsubmit = (ev) => {
    ev.preventDefault();
    const value = $("login-token").value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    $("login-token").value = "";
    $("login").hidden = true;
    $("main").hidden = false;
    onSignedIn();
  };
  $("signout").onclick = () => { sessionStorage.removeItem(TOKEN_KEY); location.reload(); };
  $("signout").hidden = !token();
}
const STATUS_WORDS = {
  running: "running", waiting_for_approval: "waiting for approval", waiting_for_client: "waiting for a client",
  waiting_for_prompt: "waiting for a prompt",
  completed: "completed", failed: "failed", cancelled: "cancelled", canceled: "cancelled", terminated: "terminated", timed_out: "timed out",
};
const ENDED = new Set(["completed", "failed", "cancelled", "canceled", "terminated", "timed_out"]);
function statusBadge(status) { return el("span", "badge status-" + status, STATUS_WORDS[status] || status); }
function seconds(ms) { return ms < 1000 ? Math.round(ms) + " ms" : (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + " s"; }
function money(usd) { return usd === undefined || usd === null ? "" : "$" + Number(usd).toFixed(4); }
function count(n) { return n === undefined || n === null ? "" : Number(n).toLocaleString("en-US"); }
function when(iso) { return iso ? new Date(iso).toLocaleString() : ""; }
function runPath(id) { return "/runs/" + encodeURIComponent(id) + "/console"; }
`;
