// Methods: want-to, can-it (verdict card), compose (the plan as a flow), similar, explore tree with
// hubs, and the dimension filter with range sliders from the catalogue (GET /api/kgos/dimensions).
import { get, post } from "../api.js";
import { append, bar, clear, field, fmt, h, message, nodeLink, select, table } from "../dom.js";
import { showError } from "../app.js";

const METHODS = [["want-to", "want to…"], ["can-it", "can it…?"], ["compose", "compose a plan"], ["similar", "similar to a node"],
  ["explore", "explore tree"], ["dimension-filter", "dimension filter"]];

export async function render(root, route) {
  const kgs = await get("kg");
  const dbId = route.args[0] || kgs[0]?.db_id;
  if (!dbId) { append(root, message("No KGs yet.", "bad")); return; }
  const method = route.params.get("m") || "want-to";
  const kgSel = select(kgs.map((k) => k.db_id), dbId);
  const mSel = select(METHODS, method);
  const reroute = () => { location.hash = `#/methods/${encodeURIComponent(kgSel.value)}?m=${mSel.value}`; };
  kgSel.addEventListener("change", reroute); mSel.addEventListener("change", reroute);
  const form = h("div");
  const out = h("div", { id: "method-result" });
  append(root, h("h1", {}, "Methods"), h("div", { class: "row card" }, field("KG", kgSel), field("method", mSel)), form, out);
  const db = encodeURIComponent(dbId);
  const run = async (path, body, show) => { clear(out, message("Running…")); try { const r = await post(`kg/${db}/${path}`, body); clear(out); show(out, r, dbId); } catch (err) { clear(out); showError(err, out); } };
  if (method === "dimension-filter") return dimensionForm(form, run);
  const text = h("input", { type: "text", id: "method-input", size: 50, required: true,
    placeholder: { "want-to": "a goal, e.g. reduce costs", "can-it": "a capability, e.g. stream responses", compose: "a goal, e.g. build an agent" }[method] || "node id or name" });
  const bodies = { "want-to": (v) => ({ goal: v, k: 10 }), "can-it": (v) => ({ capability: v }), compose: (v) => ({ goal: v, max_tools: 5 }),
    similar: (v) => ({ node: v, k: 10 }), explore: (v) => ({ node: v, depth: 2, per_level: 15 }) };
  const shows = { "want-to": wantTo, "can-it": canIt, compose, similar, explore };
  append(form, h("form", { class: "card row", onsubmit: (e) => { e.preventDefault(); run(method, bodies[method](text.value.trim()), shows[method]); } },
    text, h("button", { class: "primary" }, "Run")));
}

function refRow(dbId, node, extra = []) {
  return h("div", { class: "row" }, nodeLink(dbId, node), h("span", { class: "tag" }, node.type), extra);
}

function wantTo(out, r, dbId) {
  append(out, h("p", { class: "muted" }, `keywords: ${r.keywords.join(", ")}`),
    r.results.length ? r.results.map((x) => h("div", { class: "card" }, refRow(dbId, x.node, [h("span", { class: "muted" }, `score ${fmt(x.score)}`)]),
      bar("text", x.text_score, 1, "text"), bar("graph", x.graph_score, 1, "graph"),
      x.path?.length > 1 ? h("p", { class: "muted long" }, "via ", x.path.filter((s) => s.node).map((s) => s.name).join(" → ")) : null)) : message("Nothing found."));
}

function canIt(out, r, dbId) {
  const verdict = { yes: "ok", yes_with_limitations: "", no: "bad", unknown: "muted" }[r.status] ?? "";
  const list = (title, items) => h("div", {}, h("h3", {}, `${title} (${items.length})`), items.length ? items.map((n) => h("div", { class: "long" }, nodeLink(dbId, n), n.description ? h("span", { class: "muted" }, ` — ${n.description}`) : null)) : message("none"));
  append(out, h("div", { class: "card", id: "verdict" }, h("div", { class: `verdict ${verdict}` }, r.status.replaceAll("_", " ")),
    r.node ? h("p", {}, "matched ", nodeLink(dbId, r.node), ` (${fmt(r.match_score, 2)})`) : null, h("p", { class: "long" }, r.explanation),
    list("Limitations", r.limitations.map((l) => l.node)), list("Workarounds", r.workarounds), list("Prerequisites", r.prerequisites),
    r.notes.length ? h("p", { class: "muted" }, r.notes.join(" ")) : null));
}

function compose(out, r, dbId) {
  const links = new Map(r.edges.map((e) => [`${e.source}|${e.target}`, e]));
  const flow = h("div", { class: "flow", id: "plan" });
  r.steps.forEach((s, i) => {
    if (i) {
      const e = links.get(`${r.steps[i - 1].node.id}|${s.node.id}`);
      const ok = e && (e.status === "direct" || e.status === "via");
      append(flow, h("span", { class: `link ${ok ? "valid" : "unvalidated"}`, title: e ? `${e.type} (${e.status})` : "no feeds_into link" }, ok ? " ⟶ " : " ⇢ "));
    }
    append(flow, h("span", { class: "step" }, `${s.index}. `, nodeLink(dbId, s.node), h("div", { class: "muted" }, s.sub_goal)));
  });
  append(out, h("div", { class: "card" }, h("h3", {}, `Plan for “${r.goal}” — ${r.valid ? "every link validated" : "some links unvalidated"}`), flow,
    h("p", { class: "muted" }, "⟶ validated by a feeds_into edge or chain; ⇢ not validated."),
    r.prerequisites.length ? [h("h3", {}, "Prerequisites"), r.prerequisites.map((p) => h("div", {}, nodeLink(dbId, p.node), h("span", { class: "muted" }, ` needed by ${p.needed_by.join(", ")}`)))] : null,
    r.conflicts.length ? [h("h3", { class: "bad" }, "Conflicts"), r.conflicts.map((c) => h("div", {}, `${c.source} ✕ ${c.target}`))] : null,
    r.warnings.length || r.notes.length ? h("p", { class: "muted" }, [...r.warnings, ...r.notes].join(" ")) : null));
}

function similar(out, r, dbId) {
  append(out, h("p", {}, "Similar to ", nodeLink(dbId, r.node)),
    table(["node", "score", "jaccard", "type match"], r.results.map((x) => [nodeLink(dbId, x.node), fmt(x.score), fmt(x.jaccard), fmt(x.type_match)])));
}

function explore(out, r, dbId) {
  append(out, h("p", {}, "Exploring from ", nodeLink(dbId, r.root)), r.levels.map((lv) => h("details", { open: lv.depth <= 1, class: "card" },
    h("summary", {}, `depth ${lv.depth}: ${fmt(lv.count)} nodes (mean degree ${fmt(lv.mean_degree, 1)})`),
    lv.nodes.map((n) => h("div", { class: "row" }, nodeLink(dbId, n.node), n.is_hub ? h("span", { class: "tag" }, "hub") : null,
      n.edge_type ? h("span", { class: "muted" }, `${n.direction === "forward" ? "→" : "←"} ${n.edge_type}`) : null, h("span", { class: "muted" }, `degree ${n.degree}`))))));
}

async function dimensionForm(form, run) {
  const dims = (await get("kgos/dimensions")).dimensions;
  const rows = dims.map((d) => ({ d, on: h("input", { type: "checkbox", "aria-label": `use ${d.name}` }),
    min: h("input", { type: "range", min: 0, max: 1, step: 0.05, value: 0, "aria-label": `${d.name} min` }),
    max: h("input", { type: "range", min: 0, max: 1, step: 0.05, value: 1, "aria-label": `${d.name} max` }) }));
  const cats = [...new Set(dims.map((d) => d.category))];
  append(form, h("form", { class: "card", id: "dim-form", onsubmit: (e) => {
    e.preventDefault();
    const filters = Object.fromEntries(rows.filter((r) => r.on.checked).map((r) => [r.d.name, { min: Number(r.min.value), max: Number(r.max.value) }]));
    if (!Object.keys(filters).length) { alert("Tick at least one dimension."); return; }
    run("dimension-filter", { filters, limit: 50 }, (out, r, dbId) => append(out, h("p", {}, `${fmt(r.total)} nodes match`),
      table(["node", ...Object.keys(filters)], r.results.map((x) => [nodeLink(dbId, x.node), ...Object.keys(filters).map((k) => fmt(x.values[k], 2))]))));
  } }, h("button", { class: "primary" }, "Filter"), cats.map((c) => h("details", {}, h("summary", {}, c),
    rows.filter((r) => r.d.category === c).map((r) => h("div", { class: "row", title: r.d.description }, r.on, h("span", { style: null }, r.d.name), "min", r.min, "max", r.max))))));
}
