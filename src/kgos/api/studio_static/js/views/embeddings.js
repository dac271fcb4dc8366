// Embeddings (spec/003): the KG's embedding models (GET .../embedding/models), the same query
// searched with each model's vectors side by side (POST .../search with "model", embedding signal
// only, so the columns differ by the model alone), and embedding in the background with progress
// and cancel (POST .../embedding, GET /api/jobs/{id}, POST /api/jobs/{id}/cancel).
import { get, post } from "../api.js";
import { append, clear, field, fmt, h, message, nodeLink, select, table } from "../dom.js";
import { showError } from "../app.js";

let timer = 0;

export async function render(root, route) {
  clearInterval(timer);
  append(root, h("h1", {}, "Embeddings"));
  const kgs = await get("kg");
  const dbId = route.args[0] || kgs[0]?.db_id;
  if (!dbId) { append(root, message("No KGs yet.", "bad")); return; }
  const db = encodeURIComponent(dbId);
  const info = await get(`kg/${db}/embedding/models`);
  const kgSel = select(kgs.map((k) => k.db_id), dbId);
  kgSel.setAttribute("aria-label", "KG");
  kgSel.addEventListener("change", () => { location.hash = `#/embeddings/${encodeURIComponent(kgSel.value)}`; });
  const names = Object.keys(info.models);
  const specs = names.map((n) => info.specs?.[n] || n);  // search takes the spec ("hash:128"), vectors are named "hash-128"
  append(root, h("div", { class: "row card" }, field("KG", kgSel), h("span", {}, `${fmt(info.nodes)} nodes; search uses `, h("b", {}, info.search_model || "no vectors yet"))),
    h("div", { class: "card", id: "models" }, h("h2", {}, "Models"), names.length ? table(["model", "spec", "nodes with vectors", ""], names.map((n, i) => [
      n, specs[i], `${fmt(info.models[n])} of ${fmt(info.nodes)}`, specs[i] === info.search_model ? h("span", { class: "tag" }, "search model") : ""])) : message("No vectors stored yet: embed the KG below.")),
    compareForm(db, specs, route.params.get("q") || ""), jobPanel(db));
}

/** One query, each model's top hits by the embedding signal alone, in columns; shared hits marked. */
function compareForm(db, specs, initial) {
  const q = h("input", { type: "search", id: "embed-query", size: 48, value: initial, placeholder: "a query", "aria-label": "query" });
  const boxes = specs.map((s, i) => h("input", { type: "checkbox", value: s, checked: i < 3, "aria-label": `compare ${s}` }));
  const out = h("div", { id: "embed-compare", class: "cols" });
  const run = async () => {
    const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
    if (!q.value.trim() || !chosen.length) return;
    clear(out, message("Searching…"));
    try {
      const results = await Promise.all(chosen.map((model) => post(`kg/${db}/search`, { query: q.value.trim(), k: 10, mode: "embedding", model })));
      const counts = new Map();
      results.forEach((r) => r.results.forEach((x) => counts.set(x.node.id, (counts.get(x.node.id) || 0) + 1)));
      clear(out, chosen.map((model, i) => h("div", { class: "card col", dataset: { model } }, h("h3", {}, model),
        h("ol", {}, results[i].results.map((x) => h("li", { class: counts.get(x.node.id) > 1 ? "shared" : "" },
          nodeLink(decodeURIComponent(db), x.node), h("span", { class: "muted" }, ` ${fmt(x.score)}`)))))));
    } catch (err) { clear(out); showError(err, out); }
  };
  return h("form", { class: "card", onsubmit: (e) => { e.preventDefault(); run(); } }, h("h2", {}, "Side by side"),
    h("div", { class: "row" }, q, specs.map((s, i) => h("label", {}, boxes[i], s)), h("button", { class: "primary", id: "embed-run" }, "Compare")),
    h("p", { class: "muted" }, "Each column ranks by that model's vectors only (mode embedding); a hit in more than one column is marked."), out);
}

/** Embed in the background: the fill-in towards the KG's target (the default model), with progress and cancel. */
function jobPanel(db) {
  const out = h("div", { id: "embed-job", role: "status" });
  const progress = h("progress", { class: "progress", max: 1, value: 0, hidden: true, "aria-label": "embedding progress" });
  const cancel = h("button", { type: "button", class: "danger", id: "embed-cancel", hidden: true }, "Cancel");
  const follow = (job) => {
    clearInterval(timer);
    const show = (j) => {
      const p = j.progress || {};
      progress.hidden = false;
      progress.value = p.total ? p.done / p.total : 0;
      cancel.hidden = !j.cancellable || !["queued", "running"].includes(j.status);
      clear(out, h("p", { id: "embed-job-status" }, `${j.status}${p.phase ? ` · ${p.phase}` : ""}${p.total ? ` · ${fmt(p.done)} of ${fmt(p.total)}` : ""}`
        + `${j.eta_seconds ? ` · about ${fmt(Math.round(j.eta_seconds))} s left` : ""}${j.error ? ` · ${j.error}` : ""}`));
      if (!["queued", "running"].includes(j.status)) clearInterval(timer);
    };
    show(job);
    cancel.onclick = async () => { try { show(await post(`jobs/${encodeURIComponent(job.job_id)}/cancel`)); } catch (err) { showError(err, out); } };
    timer = setInterval(async () => {
      if (!document.body.contains(out)) { clearInterval(timer); return; }
      try { show(await get(`jobs/${encodeURIComponent(job.job_id)}`)); } catch (err) { clearInterval(timer); showError(err, out); }
    }, 1000);
  };
  get(`kg/${db}/embedding`).then((s) => { if (s.job) follow(s.job); }).catch(() => {});
  return h("div", { class: "card" }, h("h2", {}, "Embed"), h("p", { class: "muted" },
    "Embeds the nodes without vectors of the KG's target model in the background (one job at a time per server); search keeps working meanwhile."),
  h("div", { class: "row" }, h("button", { type: "button", id: "embed-start", onclick: async () => {
    try { follow(await post(`kg/${db}/embedding`)); } catch (err) { showError(err, out); }
  } }, "Embed now"), cancel), progress, out);
}
