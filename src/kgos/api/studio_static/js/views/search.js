// Search: POST /api/search over one or several KGs; the classified intent, the weights used, each
// hit's bars (one per signal it carries and per bonus, each as what it added, so they sum to the
// score), method tags and the edges that linked it; mode, k and weight controls.
import { get, post } from "../api.js";
import { append, bar, clear, field, fmt, h, message, nodeLink, select } from "../dom.js";
import { showError } from "../app.js";

const MODES = ["hybrid", "fixed3", "fixed4", "embedding", "bm25", "fts", "text", "graph", "rrf"];
const SIGNALS = [["embedding", "alpha"], ["text", "beta"], ["graph", "gamma"], ["intent", "delta"]];

export async function render(root, route) {
  const kgs = await get("kg");
  const p = route.params;
  const chosen = new Set((p.get("kgs") || kgs[0]?.db_id || "").split(",").filter(Boolean));
  const boxes = kgs.map((k) => h("input", { type: "checkbox", value: k.db_id, checked: chosen.has(k.db_id) }));
  const query = h("input", { type: "search", id: "query", value: p.get("q") || "", size: 50, placeholder: "e.g. I want to reduce my API costs", required: true });
  const mode = select(MODES, p.get("mode") || "hybrid");
  const k = h("input", { type: "number", id: "k", min: 1, max: 100, value: p.get("k") || 10 });
  const custom = h("input", { type: "checkbox", id: "custom-weights", checked: p.has("w") });
  const weights = (p.get("w") || "0.35,0.40,0.15,0.10").split(",").map(Number);
  const sliders = SIGNALS.map(([name], i) => h("input", { type: "range", min: 0, max: 1, step: 0.05, value: weights[i] ?? 0, "aria-label": `${name} weight` }));
  const out = h("div", { id: "results" });
  const go = () => {
    const params = new URLSearchParams({ q: query.value, kgs: boxes.filter((b) => b.checked).map((b) => b.value).join(","), mode: mode.value, k: k.value });
    if (custom.checked) params.set("w", sliders.map((s) => s.value).join(","));
    location.hash = `#/search?${params}`;
  };
  append(root, h("h1", {}, "Search"),
    h("form", { class: "card", onsubmit: (e) => { e.preventDefault(); go(); } },
      h("div", { class: "row" }, query, h("button", { class: "primary" }, "Search")),
      h("div", { class: "row" }, "KGs:", boxes.map((b) => h("label", {}, b, b.value))),
      h("div", { class: "row" }, field("mode", mode), field("k", k), field("own weights", custom),
        SIGNALS.map(([name], i) => field(name, sliders[i])))), out);
  if (!p.get("q")) { append(out, message("Type a query: each hit shows how much each signal contributed.")); return; }
  const dbIds = [...chosen];
  if (!dbIds.length) { append(out, message("Pick at least one KG.", "bad")); return; }
  const body = { query: p.get("q"), k: Number(p.get("k") || 10), mode: p.get("mode") || "hybrid", explain: true, db_ids: dbIds };
  if (p.has("w")) body.weights = weights;
  try { show(out, await post("search", body)); } catch (err) { showError(err, out); }
}

function show(out, r) {
  const w = r.weights;
  append(out, h("div", { class: "card", id: "intent" }, h("b", {}, "Intent: "), `${r.intent.category} (${fmt(r.intent.score, 2)}, ${r.intent.source})`,
    h("div", {}, h("b", {}, "Weights: "), SIGNALS.map(([name, key]) => `${name} ${fmt(w[key], 2)}  `), h("span", { class: "muted" }, w.source || ""))),
  r.results.length ? null : message("No hits."),
  r.results.map((hit) => h("div", { class: "card hit" },
    h("div", { class: "row" }, h("b", {}, `${hit.rank}.`), nodeLink(hit.source_kg || "", hit.node), h("span", { class: "tag" }, hit.node.type),
      hit.source_kg ? h("span", { class: "tag" }, hit.source_kg) : null, h("span", { class: "muted" }, `score ${fmt(hit.score)}`),
      (hit.method || "").split("+").filter(Boolean).map((m) => h("span", { class: "tag method" }, m))),
    h("p", { class: "muted long" }, (hit.node.description || "").slice(0, 300)),
    hit.components ? h("div", { class: "signals" }, contributions(hit)) : null,
    hit.edge_annotations?.length ? h("details", {}, h("summary", {}, `${hit.edge_annotations.length} linking edges`),
      hit.edge_annotations.map((e) => h("div", { class: "long" }, `${e.direction === "outgoing" ? "→" : "←"} ${e.type} `, nodeLink(hit.source_kg || "", { id: e.other, name: e.other_name || e.other })))) : null)));
}

// Every signal of the hit (in the JSON's order) as weight x value, then every bonus: what each added
// to the score, so the bars add up to it (issue 29).
function contributions(hit) {
  const total = hit.score || 1;
  const signals = Object.entries(hit.components).map(([name, value]) => {
    const weight = hit.weights?.[name] ?? 0;
    const b = bar(name, weight * value, total, name);
    b.title = `${name}: weight ${fmt(weight)} x value ${fmt(value)} = ${fmt(weight * value)}`;
    return b;
  });
  const bonuses = Object.entries(hit.bonuses || {}).map(([name, amount]) => {
    const b = bar(`+${name}`, amount, total, "bonus");
    b.title = `${name} bonus: +${fmt(amount)}`;
    return b;
  });
  return [...signals, ...bonuses];
}
