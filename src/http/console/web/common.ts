/**
 * What both console pages share: the token (taken from a `#token=` fragment or the login form, kept in this
 * tab's sessionStorage, sent only as `Authorization: Bearer`), API calls whose failures show in the page (never
 * an alert()), and small DOM helpers that set text, never HTML.
 */
import type { describeAgent } from "../../../shared/agents.js";

/** GET /console/settings (src/http/server.ts). */
export interface Settings {
  temporalUi: string;
  namespace: string;
  agents: Agent[];
  /** Set with no agents configured: the API takes a model and a prompt, and these models are served by name. */
  rawRuns?: boolean;
  models?: string[];
}
export type Agent = ReturnType<typeof describeAgent>;

const TOKEN_KEY = "jai-token";
/**
 * A token in the fragment (as the worker prints the console's URL) never reaches a server or its logs: kept for
 * this tab, then taken out of the address bar so it is not in the history or a copied link either.
 */
export function keepFragmentToken() {
  const fromHash = new URLSearchParams(location.hash.slice(1)).get("token");
  if (!fromHash) return;
  sessionStorage.setItem(TOKEN_KEY, fromHash);
  history.replaceState(null, "", location.pathname + location.search);
}
export const token = () => sessionStorage.getItem(TOKEN_KEY) || "";
export const authHeaders = (): Record<string, string> => (token() ? { authorization: `Bearer ${token()}` } : {});
/** An element of the page by id (the page's own ids: present when asked for). */
export const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** A new element with a class, a text (as text) and properties. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  cls?: string,
  text?: unknown,
  props?: Partial<HTMLElementTagNameMap[K]>,
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return Object.assign(e, props);
}
export const button = (text: string, cls?: string, onclick?: (ev: MouseEvent) => unknown) =>
  el("button", cls, text, { type: "button", ...(onclick ? { onclick } : {}) });
/** A form field with its label above it. */
export function labelled(text: string, control: HTMLElement) {
  const l = el("label");
  l.append(el("span", "", text), control);
  return l;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers = { ...authHeaders(), ...(body !== undefined ? { "content-type": "application/json" } : {}) };
  const res = await fetch(path, { method, headers, body: body !== undefined ? JSON.stringify(body) : undefined });
  const data = (await res.json().catch(() => ({}))) as T & { error?: string };
  if (res.status === 401) {
    showLogin(token() ? "The server refused that token." : "");
    throw new ApiError(401, "sign in with the server's token");
  }
  if (!res.ok) throw new ApiError(res.status, data.error || res.statusText);
  return data;
}
/** One line at the top of the page: what went wrong (or right), in words, instead of a browser alert. */
export function notice(text: string, kind?: "error" | "ok") {
  const n = $("notice");
  n.textContent = text;
  n.className = text ? `notice ${kind ?? "error"}` : "notice";
}
/** A failed call, said in the page as "<what>: <why>"; a 401 says nothing here (the login form shows). */
export function report(what: string, e: unknown) {
  if (!(e instanceof ApiError && e.status === 401)) notice(`${what}: ${(e as Error).message}`);
}
export function showLogin(why: string) {
  $("login").hidden = false;
  $("login-why").textContent = why;
  $("main").hidden = true;
  $("login-token").focus();
}
export function setupLogin(onSignedIn: () => void) {
  const input = $<HTMLInputElement>("login-token");
  // The form never submits anywhere (CSP form-action 'none' too): the token goes to sessionStorage only.
  $<HTMLFormElement>("login").onsubmit = (ev) => {
    ev.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    sessionStorage.setItem(TOKEN_KEY, value);
    input.value = "";
    $("login").hidden = true;
    $("main").hidden = false;
    onSignedIn();
  };
  $("signout").onclick = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    location.reload();
  };
  $("signout").hidden = !token();
}

const STATUS_WORDS: Record<string, string> = {
  running: "running",
  waiting_for_approval: "waiting for approval",
  waiting_for_client: "waiting for a client",
  waiting_for_prompt: "waiting for a prompt",
  completed: "completed",
  failed: "failed",
  cancelled: "cancelled",
  canceled: "cancelled",
  terminated: "terminated",
  timed_out: "timed out",
};
export const statusWord = (status: string) => STATUS_WORDS[status] ?? status;
export const ENDED = new Set(["completed", "failed", "cancelled", "canceled", "terminated", "timed_out"]);
export const statusBadge = (status: string) => el("span", `badge status-${status}`, statusWord(status));
export const seconds = (ms: number) =>
  ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
export const money = (usd?: number | null) => (usd === undefined || usd === null ? "" : `$${Number(usd).toFixed(4)}`);
export const count = (n?: number | null) => (n === undefined || n === null ? "" : Number(n).toLocaleString("en-US"));
export const when = (iso?: string) => (iso ? new Date(iso).toLocaleString() : "");
export const runPath = (id: string) => `/runs/${encodeURIComponent(id)}/console`;
