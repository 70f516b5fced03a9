/**
 * The front page, as browser source: "New run" (an agent of the registry, a prompt, the overrides the agent
 * allows; with no agents configured, a model the worker serves and a prompt) and the runs from Temporal visibility (runs waiting for approval pinned on top, filters, paging,
 * refreshed every few seconds while the tab is visible).
 */
export const RUNS_JS = String.raw`
const REFRESH_MS = 3000;
const FILTERS = [["", "All"], ["approval", "Waiting for approval"], ["waiting", "Waiting"], ["running", "Running"], ["failed", "Failed"], ["completed", "Completed"], ["cancelled", "Cancelled"]];

function runsView(settings) {
  const main = $("main");
  main.textContent = "";
  main.append(newRunForm(settings), runsSection());
  const params = new URLSearchParams(location.search);
  const view = { status: params.get("status") || "", model: params.get("model") || "", tenant: params.get("tenant") || "", text: params.get("text") || "", pages: [undefined], busy: false };
  $("model-filter").value = view.model;
  $("tenant-filter").value = view.tenant;
  $("text-filter").value = view.text;
  const show = () => {
    for (const b of document.querySelectorAll("#filters button")) b.setAttribute("aria-pressed", String(b.dataset.status === view.status));
    // The filters live in the query string (no token there, ever), so a view can be bookmarked and shared.
    const q = new URLSearchParams();
    for (const k of ["status", "model", "tenant", "text"]) if (view[k]) q.set(k, view[k]);
    history.replaceState(null, "", "/" + (q.toString() ? "?" + q : ""));
    return load(view);
  };
  for (const b of document.querySelectorAll("#filters button")) b.onclick = () => { view.status = b.dataset.status; view.pages = [undefined]; show(); };
  $("filter-form").onsubmit = (ev) => { ev.preventDefault(); view.model = $("model-filter").value.trim(); view.tenant = $("tenant-filter").value.trim(); view.text = $("text-filter").value.trim(); view.pages = [undefined]; show(); };
  $("next").onclick = () => { if (view.next) { view.pages.push(view.next); show(); } };
  $("prev").onclick = () => { if (view.pages.length > 1) { view.pages.pop(); show(); } };
  show();
  setInterval(() => { if (!document.hidden && $("live").checked) load(view); }, REFRESH_MS);
}

function runsSection() {
  const s = el("section", "runs");
  s.append(el("h2", "", "Runs"));
  const filters = el("div", "filters"); filters.id = "filters";
  for (const [status, label] of FILTERS) { const b = button(label, "filter"); b.dataset.status = status; filters.append(b); }
  const form = el("form", "filter-form"); form.id = "filter-form";
  const model = el("input"); model.id = "model-filter"; model.placeholder = "model, e.g. anthropic/claude-sonnet-4-5"; model.setAttribute("list", "models");
  const models = el("datalist"); models.id = "models";
  // The same rule as the server's (it refuses any other name with a 400): the browser says so before asking.
  const tenant = el("input"); tenant.id = "tenant-filter"; tenant.placeholder = "tenant"; tenant.pattern = "[A-Za-z0-9._\\-]{1,64}"; tenant.maxLength = 64;
  const text = el("input"); text.id = "text-filter"; text.placeholder = "words of the summary";
  const live = el("input"); live.type = "checkbox"; live.id = "live"; live.checked = true;
  const liveLabel = el("label", "live"); liveLabel.append(live, " live");
  const filter = button("Filter");
  filter.type = "submit";
  form.append(model, models, tenant, text, filter, liveLabel);
  const table = el("table", "runs-table"); table.id = "runs-table";
  const head = el("tr");
  for (const h of ["Status", "Summary", "Model", "Turns", "Tokens", "Cost", "Started", "Ended"]) head.append(el("th", "", h));
  const thead = el("thead"); thead.append(head);
  const body = el("tbody"); body.id = "runs-body";
  table.append(thead, body);
  const pager = el("div", "pager");
  pager.append(button("← Newer", "", null), el("span", "muted", ""), button("Older →", "", null));
  pager.children[0].id = "prev"; pager.children[1].id = "page-info"; pager.children[2].id = "next";
  s.append(filters, form, table, pager);
  return s;
}

function runRow(r, pinned) {
  const tr = el("tr", pinned ? "pinned" : "");
  tr.dataset.workflowId = r.workflowId;
  tr.dataset.status = r.status;
  if (r.tenant) tr.dataset.tenant = r.tenant;
  const summary = el("td", "summary");
  const a = el("a", "", r.summary || r.workflowId); a.href = runPath(r.workflowId);
  summary.append(a, el("div", "muted id", (r.tenant ? "tenant " + r.tenant + " · " : "") + r.workflowId));
  const status = el("td"); status.append(statusBadge(r.status));
  if (r.stopReason && ENDED.has(r.status) && r.stopReason !== "stop") status.append(el("div", "muted", r.stopReason));
  tr.append(status, summary, el("td", "", r.model || ""), el("td", "num", count(r.turns)), el("td", "num", count(r.totalTokens)), el("td", "num", money(r.costUsd)), el("td", "", when(r.startTime)), el("td", "", when(r.closeTime)));
  tr.onclick = (ev) => { if (ev.target.tagName !== "A") location.href = runPath(r.workflowId); };
  return tr;
}

async function load(view) {
  if (view.busy) return;
  view.busy = true;
  const q = new URLSearchParams();
  if (view.status) q.set("status", view.status);
  if (view.model) q.set("model", view.model);
  if (view.tenant) q.set("tenant", view.tenant);
  if (view.text) q.set("text", view.text);
  const pageToken = view.pages[view.pages.length - 1];
  if (pageToken) q.set("pageToken", pageToken);
  try {
    const started = performance.now();
    const page = await api("GET", "/runs?" + q);
    const body = $("runs-body");
    body.textContent = "";
    for (const r of page.pinned) body.append(runRow(r, true));
    for (const r of page.runs) body.append(runRow(r, false));
    if (!page.pinned.length && !page.runs.length) { const tr = el("tr"); const td = el("td", "muted", "No runs here."); td.colSpan = 8; tr.append(td); body.append(tr); }
    view.next = page.nextPageToken;
    $("next").disabled = !view.next;
    $("prev").disabled = view.pages.length < 2;
    $("page-info").textContent = "page " + view.pages.length + (page.withAttributes ? "" : " · this namespace lacks the agent's search attributes: filtered by Temporal's status only");
    const seen = new Set([...document.querySelectorAll("#models option")].map((o) => o.value));
    for (const r of [...page.pinned, ...page.runs]) if (r.model && !seen.has(r.model)) { seen.add(r.model); const o = el("option"); o.value = r.model; $("models").append(o); }
    document.body.dataset.listedIn = String(Math.round(performance.now() - started));
    notice("");
  } catch (e) {
    if (e.status !== 401) notice("Could not list runs: " + e.message);
  } finally {
    view.busy = false;
  }
}

/** Starts the run the form describes and opens its page; a refusal shows in the page. */
async function startRun(body, start) {
  start.disabled = true;
  try {
    const { workflowId } = await api("POST", "/runs", body);
    location.href = runPath(workflowId);
  } catch (e) {
    if (e.status !== 401) notice("The run was not started: " + e.message);
    start.disabled = false;
  }
}

function newRunForm(settings) {
  const agents = settings.agents || [];
  const s = el("section", "newrun");
  s.append(el("h2", "", "New run"));
  if (!agents.length) {
    if (settings.rawRuns) s.append(modelRunForm(settings.models || []));
    else s.append(el("p", "muted", "No agents are configured. Declare them in the config module (agents: [...]); see docs/console.md."));
    return s;
  }
  const form = el("form"); form.id = "new-run";
  const pick = el("select"); pick.id = "agent";
  for (const a of agents) { const o = el("option", "", a.name); o.value = a.name; pick.append(o); }
  const about = el("p", "muted"); about.id = "agent-about";
  const prompt = el("textarea"); prompt.id = "prompt"; prompt.rows = 3; prompt.placeholder = "What should the agent do?"; prompt.required = true;
  const extras = el("div", "overrides"); extras.id = "overrides";
  const tenant = el("input"); tenant.id = "tenant"; tenant.placeholder = "optional: who the run is for"; tenant.pattern = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}"; tenant.maxLength = 64;
  const start = el("button", "primary", "Start run"); start.type = "submit"; start.id = "start";
  const label = (text, control) => { const l = el("label"); l.append(el("span", "", text), control); return l; };
  form.append(label("Agent", pick), about, label("Prompt", prompt), extras, label("Tenant", tenant), start);
  const render = () => {
    const a = agents.find((x) => x.name === pick.value);
    about.textContent = (a.description ? a.description + " · " : "") + a.model + (a.session ? " · session (answers prompts until closed)" : " · one-shot") + (a.tools ? " · tools: " + (a.tools.join(", ") || "none") : " · all the worker's tools");
    extras.textContent = "";
    if (a.overrides.model) {
      const m = el("select"); m.id = "model";
      for (const name of a.models) { const o = el("option", "", name); o.value = name; m.append(o); }
      extras.append(label("Model", m));
    }
    if (a.overrides.systemPrompt) { const t = el("textarea"); t.id = "system-prompt"; t.rows = 2; t.placeholder = "the agent's own system prompt"; extras.append(label("System prompt", t)); }
    if (a.overrides.tools) {
      const box = el("fieldset"); box.id = "tools"; box.append(el("legend", "", "Tools"));
      for (const name of a.tools) { const c = el("input"); c.type = "checkbox"; c.value = name; c.checked = true; const l = el("label", "tool-pick"); l.append(c, " " + name); box.append(l); }
      extras.append(box);
    }
  };
  pick.onchange = render;
  render();
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const a = agents.find((x) => x.name === pick.value);
    const body = { agent: a.name, prompt: prompt.value };
    if ($("model")) body.model = $("model").value;
    if ($("system-prompt") && $("system-prompt").value.trim()) body.systemPrompt = $("system-prompt").value;
    if (tenant.value.trim()) body.tenant = tenant.value.trim();
    if ($("tools")) body.tools = [...$("tools").querySelectorAll("input:checked")].map((c) => c.value);
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
function modelRunForm(models) {
  const form = el("form"); form.id = "new-run";
  const model = el("input"); model.id = "run-model"; model.required = true; model.setAttribute("list", "served-models");
  model.placeholder = "provider/model, e.g. anthropic/claude-sonnet-4-5"; model.value = models[0] || "";
  const served = el("datalist"); served.id = "served-models";
  for (const name of models) { const o = el("option"); o.value = name; served.append(o); }
  const about = el("p", "muted", "No agents are configured, so a run starts from a model and a prompt, with all the worker's tools" + (models.length ? "; it serves " + models.join(", ") + " and any provider whose API key it has." : ". Name a model whose provider's API key the worker has.") + " Named agents (docs/console.md) fix what a run may do.");
  const prompt = el("textarea"); prompt.id = "prompt"; prompt.rows = 3; prompt.placeholder = "What should the agent do?"; prompt.required = true;
  const tenant = el("input"); tenant.id = "tenant"; tenant.placeholder = "optional: who the run is for"; tenant.pattern = "[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}"; tenant.maxLength = 64;
  const start = el("button", "primary", "Start run"); start.type = "submit"; start.id = "start";
  const label = (text, control) => { const l = el("label"); l.append(el("span", "", text), control); return l; };
  form.append(about, label("Model", model), served, label("Prompt", prompt), label("Tenant", tenant), start);
  form.onsubmit = async (ev) => {
    ev.preventDefault();
    const body = { model: model.value.trim(), prompt: prompt.value };
    if (tenant.value.trim()) body.tenant = tenant.value.trim();
    await startRun(body, start);
  };
  return form;
}
`;
