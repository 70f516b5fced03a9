/**
 * The front page: "New run" (an agent of the registry, a prompt, the overrides the agent allows; with no agents
 * configured, a model the worker serves and a prompt) and the runs from Temporal visibility (runs waiting for
 * approval pinned on top, filters, paging, refreshed every few seconds while the tab is visible).
 */
import type { AgentRunRequest } from "../../../shared/agents.js";
import {
  $,
  api,
  button,
  count,
  el,
  ENDED,
  labelled,
  money,
  notice,
  report,
  runPath,
  statusBadge,
  when,
  type Settings,
} from "./common.js";
import type { RunListPage, RunRow } from "../../../shared/run-rows.js";

const REFRESH_MS = 3000;
const FILTERS = [
  ["", "All"],
  ["approval", "Waiting for approval"],
  ["waiting", "Waiting"],
  ["running", "Running"],
  ["failed", "Failed"],
  ["completed", "Completed"],
  ["cancelled", "Cancelled"],
];
/** What a view is filtered by, as its query string names them. */
const FIELDS = ["status", "model", "tenant", "text"] as const;
type View = Record<(typeof FIELDS)[number], string> & { pages: (string | undefined)[]; next?: string; busy: boolean };

export function runsView(settings: Settings) {
  const main = $("main");
  main.textContent = "";
  main.append(newRunForm(settings), runsSection());
  const params = new URLSearchParams(location.search);
  const view: View = { status: "", model: "", tenant: "", text: "", pages: [undefined], busy: false };
  for (const k of FIELDS) view[k] = params.get(k) || "";
  const [model, tenant, text] = ["model-filter", "tenant-filter", "text-filter"].map((id) => $<HTMLInputElement>(id));
  model.value = view.model;
  tenant.value = view.tenant;
  text.value = view.text;
  const filterButtons = document.querySelectorAll<HTMLButtonElement>("#filters button");
  const show = () => {
    for (const b of filterButtons) b.setAttribute("aria-pressed", String(b.dataset.status === view.status));
    // The filters live in the query string (no token there, ever), so a view can be bookmarked and shared.
    const q = new URLSearchParams();
    for (const k of FIELDS) if (view[k]) q.set(k, view[k]);
    history.replaceState(null, "", `/${q.toString() ? `?${q}` : ""}`);
    void load(view);
  };
  for (const b of filterButtons)
    b.onclick = () => {
      view.status = b.dataset.status ?? "";
      view.pages = [undefined];
      show();
    };
  $<HTMLFormElement>("filter-form").onsubmit = (ev) => {
    ev.preventDefault();
    Object.assign(view, { model: model.value.trim(), tenant: tenant.value.trim(), text: text.value.trim() });
    view.pages = [undefined];
    show();
  };
  $("next").onclick = () => {
    if (!view.next) return;
    view.pages.push(view.next);
    show();
  };
  $("prev").onclick = () => {
    if (view.pages.length < 2) return;
    view.pages.pop();
    show();
  };
  show();
  setInterval(() => {
    if (!document.hidden && $<HTMLInputElement>("live").checked) void load(view);
  }, REFRESH_MS);
}

function runsSection() {
  const s = el("section", "runs");
  s.append(el("h2", "", "Runs"));
  const filters = el("div", "filters", undefined, { id: "filters" });
  for (const [status, label] of FILTERS) {
    const b = button(label, "filter");
    b.dataset.status = status;
    filters.append(b);
  }
  const form = el("form", "filter-form", undefined, { id: "filter-form" });
  const model = el("input", "", undefined, {
    id: "model-filter",
    placeholder: "model, e.g. anthropic/claude-sonnet-4-5",
  });
  model.setAttribute("list", "models");
  // The same rule as the server's (it refuses any other name with a 400): the browser says so before asking.
  const tenant = el("input", "", undefined, {
    id: "tenant-filter",
    placeholder: "tenant",
    pattern: "[A-Za-z0-9._\\-]{1,64}",
    maxLength: 64,
  });
  const text = el("input", "", undefined, { id: "text-filter", placeholder: "words of the summary" });
  const liveLabel = el("label", "live");
  liveLabel.append(el("input", "", undefined, { type: "checkbox", id: "live", checked: true }), " live");
  const filter = button("Filter");
  filter.type = "submit";
  form.append(model, el("datalist", "", undefined, { id: "models" }), tenant, text, filter, liveLabel);
  const head = el("tr");
  for (const h of ["Status", "Summary", "Model", "Turns", "Tokens", "Cost", "Started", "Ended"])
    head.append(el("th", "", h));
  const thead = el("thead");
  thead.append(head);
  const table = el("table", "runs-table", undefined, { id: "runs-table" });
  table.append(thead, el("tbody", "", undefined, { id: "runs-body" }));
  const pager = el("div", "pager");
  pager.append(
    Object.assign(button("← Newer", ""), { id: "prev" }),
    el("span", "muted", "", { id: "page-info" }),
    Object.assign(button("Older →", ""), { id: "next" }),
  );
  s.append(filters, form, table, pager);
  return s;
}

function runRow(r: RunRow, pinned: boolean) {
  const tr = el("tr", pinned ? "pinned" : "");
  tr.dataset.workflowId = r.workflowId;
  tr.dataset.status = r.status;
  if (r.tenant) tr.dataset.tenant = r.tenant;
  const summary = el("td", "summary");
  const a = el("a", "", r.summary || r.workflowId, { href: runPath(r.workflowId) });
  summary.append(a, el("div", "muted id", (r.tenant ? `tenant ${r.tenant} · ` : "") + r.workflowId));
  const status = el("td");
  status.append(statusBadge(r.status));
  if (r.stopReason && ENDED.has(r.status) && r.stopReason !== "stop") status.append(el("div", "muted", r.stopReason));
  tr.append(
    status,
    summary,
    el("td", "", r.model || ""),
    el("td", "num", count(r.turns)),
    el("td", "num", count(r.totalTokens)),
    el("td", "num", money(r.costUsd)),
    el("td", "", when(r.startTime)),
    el("td", "", when(r.closeTime)),
  );
  tr.onclick = (ev) => {
    if ((ev.target as HTMLElement).tagName !== "A") location.href = runPath(r.workflowId);
  };
  return tr;
}

async function load(view: View) {
  if (view.busy) return;
  view.busy = true;
  const q = new URLSearchParams();
  for (const k of FIELDS) if (view[k]) q.set(k, view[k]);
  const pageToken = view.pages[view.pages.length - 1];
  if (pageToken) q.set("pageToken", pageToken);
  try {
    const started = performance.now();
    const page = await api<RunListPage>("GET", `/runs?${q}`);
    const body = $("runs-body");
    body.textContent = "";
    for (const r of page.pinned) body.append(runRow(r, true));
    for (const r of page.runs) body.append(runRow(r, false));
    if (!page.pinned.length && !page.runs.length) {
      const tr = el("tr");
      tr.append(el("td", "muted", "No runs here.", { colSpan: 8 }));
      body.append(tr);
    }
    view.next = page.nextPageToken;
    $<HTMLButtonElement>("next").disabled = !view.next;
    $<HTMLButtonElement>("prev").disabled = view.pages.length < 2;
    $("page-info").textContent =
      `page ${view.pages.length}` +
      (page.withAttributes
        ? ""
        : " · this namespace lacks the agent's search attributes: filtered by Temporal's status only");
    const seen = new Set([...document.querySelectorAll<HTMLOptionElement>("#models option")].map((o) => o.value));
    for (const r of [...page.pinned, ...page.runs])
      if (r.model && !seen.has(r.model)) {
        seen.add(r.model);
        $("models").append(el("option", "", undefined, { value: r.model }));
      }
    document.body.dataset.listedIn = String(Math.round(performance.now() - started));
    notice("");
  } catch (e) {
    report("Could not list runs", e);
  } finally {
    view.busy = false;
  }
}

/** Starts the run the form describes and opens its page; a refusal shows in the page. */
async function startRun(
  body: AgentRunRequest | { model: string; prompt: string; tenant?: string },
  start: HTMLButtonElement,
) {
  start.disabled = true;
  try {
    const { workflowId } = await api<{ workflowId: string }>("POST", "/runs", body);
    location.href = runPath(workflowId);
  } catch (e) {
    report("The run was not started", e);
    start.disabled = false;
  }
}

/** The prompt, tenant and start button both forms have. */
function promptFields() {
  const prompt = el("textarea", "", undefined, {
    id: "prompt",
    rows: 3,
    placeholder: "What should the agent do?",
    required: true,
  });
  const tenant = el("input", "", undefined, {
    id: "tenant",
    placeholder: "optional: who the run is for",
    pattern: "[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}",
    maxLength: 64,
  });
  const start = el("button", "primary", "Start run", { type: "submit", id: "start" });
  return { prompt, tenant, start };
}

function newRunForm(settings: Settings) {
  const agents = settings.agents || [];
  const s = el("section", "newrun");
  s.append(el("h2", "", "New run"));
  if (!agents.length) {
    if (settings.rawRuns) s.append(modelRunForm(settings.models || []));
    else
      s.append(
        el(
          "p",
          "muted",
          "No agents are configured. Declare them in the config module (agents: [...]); see docs/console.md.",
        ),
      );
    return s;
  }
  const form = el("form", "", undefined, { id: "new-run" });
  const pick = el("select", "", undefined, { id: "agent" });
  for (const a of agents) pick.append(el("option", "", a.name, { value: a.name }));
  const about = el("p", "muted", undefined, { id: "agent-about" });
  const { prompt, tenant, start } = promptFields();
  const extras = el("div", "overrides", undefined, { id: "overrides" });
  form.append(labelled("Agent", pick), about, labelled("Prompt", prompt), extras, labelled("Tenant", tenant), start);
  const agent = () => agents.find((x) => x.name === pick.value)!;
  const render = () => {
    const a = agent();
    about.textContent =
      (a.description ? `${a.description} · ` : "") +
      a.model +
      (a.session ? " · session (answers prompts until closed)" : " · one-shot") +
      (a.tools ? ` · tools: ${a.tools.join(", ") || "none"}` : " · all the worker's tools");
    extras.textContent = "";
    if (a.overrides.model) {
      const m = el("select", "", undefined, { id: "model" });
      for (const name of a.models) m.append(el("option", "", name, { value: name }));
      extras.append(labelled("Model", m));
    }
    if (a.overrides.systemPrompt) {
      const t = el("textarea", "", undefined, {
        id: "system-prompt",
        rows: 2,
        placeholder: "the agent's own system prompt",
      });
      extras.append(labelled("System prompt", t));
    }
    if (a.overrides.tools) {
      const box = el("fieldset", "", undefined, { id: "tools" });
      box.append(el("legend", "", "Tools"));
      for (const name of a.tools ?? []) {
        const l = el("label", "tool-pick");
        l.append(el("input", "", undefined, { type: "checkbox", value: name, checked: true }), ` ${name}`);
        box.append(l);
      }
      extras.append(box);
    }
  };
  pick.onchange = render;
  render();
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const body: AgentRunRequest = { agent: agent().name, prompt: prompt.value };
    const model = document.getElementById("model") as HTMLSelectElement | null;
    const system = document.getElementById("system-prompt") as HTMLTextAreaElement | null;
    const tools = document.getElementById("tools");
    if (model) body.model = model.value;
    if (system && system.value.trim()) body.systemPrompt = system.value;
    if (tenant.value.trim()) body.tenant = tenant.value.trim();
    if (tools) body.tools = [...tools.querySelectorAll<HTMLInputElement>("input:checked")].map((c) => c.value);
    await startRun(body, start);
  };
  s.append(form);
  return s;
}

/**
 * No agents configured: a run from a model and a prompt, as the API takes it without agents (POST /runs
 * { model, prompt }). The models the worker serves are offered (the offline demo model among them); any
 * "provider/id" whose API key the worker has may be typed.
 */
function modelRunForm(models: string[]) {
  const form = el("form", "", undefined, { id: "new-run" });
  const model = el("input", "", undefined, {
    id: "run-model",
    required: true,
    placeholder: "provider/model, e.g. anthropic/claude-sonnet-4-5",
    value: models[0] || "",
  });
  model.setAttribute("list", "served-models");
  const served = el("datalist", "", undefined, { id: "served-models" });
  for (const name of models) served.append(el("option", "", undefined, { value: name }));
  const about = el(
    "p",
    "muted",
    "No agents are configured, so a run starts from a model and a prompt, with all the worker's tools" +
      (models.length
        ? `; it serves ${models.join(", ")} and any provider whose API key it has.`
        : ". Name a model whose provider's API key the worker has.") +
      " Named agents (docs/console.md) fix what a run may do.",
  );
  const { prompt, tenant, start } = promptFields();
  form.append(about, labelled("Model", model), served, labelled("Prompt", prompt), labelled("Tenant", tenant), start);
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const body: { model: string; prompt: string; tenant?: string } = {
      model: model.value.trim(),
      prompt: prompt.value,
    };
    if (tenant.value.trim()) body.tenant = tenant.value.trim();
    await startRun(body, start);
  };
  return form;
}
