// Workspace: KGs with counts and kind; create, import by upload (with progress), export, delete
// (with confirmation); validation by rule with links to the offending nodes; stats.
import { download, get, post, send, upload } from "../api.js";
import { append, clear, field, fmt, h, message, select, table } from "../dom.js";
import { showError } from "../app.js";

export async function render(root, route) {
  const [kgs, roots] = await Promise.all([get("kg"), get("ingest/roots").catch(() => ({ enabled: false, roots: [] }))]);
  const detail = h("div", { id: "kg-detail" });
  append(root, h("h1", {}, "Workspace"),
    h("div", { class: "card" }, table(["KG", "Name", "Kind", "Nodes", "Edges", ""], kgs.map((kg) => [
      h("a", { href: `#/workspace/${encodeURIComponent(kg.db_id)}` }, kg.db_id), h("span", { class: "long" }, kg.name || ""),
      kg.kind + (kg.read_only ? " (read-only)" : ""), fmt(kg.nodes), fmt(kg.edges), actions(kg)])),
      kgs.length ? null : message("No KGs yet: create one or import a file below (or run 'kgos demo').")),
    h("div", { class: "row cards" }, createForm(), importForm(kgs), roots.enabled ? attachForm(roots.roots) : null),
    roots.enabled ? null : h("p", { class: "muted", id: "attach-off" }, "Attaching an existing SQLite file from the studio is off on this server: start it with KGOS_INGEST_ROOTS=<folders it may read>, or use kgos kg attach DB_ID PATH."),
    detail);
  if (route.args[0]) await showDetail(detail, route.args[0]);
}

function actions(kg) {
  const del = h("button", { class: "danger", onclick: async () => {
    if (!confirm(`Delete the KG '${kg.db_id}' (${kg.nodes} nodes)? This cannot be undone.`)) return;
    try { await send("DELETE", `kg/${encodeURIComponent(kg.db_id)}`); location.hash = "#/workspace"; dispatchEvent(new HashChangeEvent("hashchange")); }
    catch (err) { showError(err); }
  } }, "Delete");
  const fmtSel = select(["nodelink", "jsonl", "graphml", "csv"], "nodelink");
  fmtSel.setAttribute("aria-label", `export format of ${kg.db_id}`);
  const exp = h("button", { onclick: () => download(`api/kg/${encodeURIComponent(kg.db_id)}/export?format=${fmtSel.value}`, `${kg.db_id}.${fmtSel.value}`).catch((err) => showError(err)) }, "Export");
  return h("span", { class: "row" }, h("a", { href: `#/explore/${encodeURIComponent(kg.db_id)}` }, "Explore"), fmtSel, exp, del);
}

function createForm() {
  const id = h("input", { type: "text", placeholder: "db_id", required: true, pattern: "[a-z0-9_\\-]{1,64}" });
  const name = h("input", { type: "text", placeholder: "name (optional)" });
  const out = h("div");
  const form = h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try { const kg = await post("kg", { db_id: id.value.trim(), name: name.value.trim() || null }); location.hash = `#/workspace/${kg.db_id}`; }
    catch (err) { showError(err, out); }
  } }, h("h2", {}, "Create a KG"), id, " ", name, " ", h("button", { class: "primary" }, "Create"), out);
  return form;
}

/** Attach a SQLite KG file on the server (read-only); the server reads only below its roots. */
function attachForm(roots) {
  const id = h("input", { type: "text", placeholder: "db_id", id: "attach-db", required: true, pattern: "[a-z0-9_\\-]{1,64}" });
  const path = h("input", { type: "text", placeholder: `${roots[0]}/…/kg.sqlite`, id: "attach-path", required: true, size: 40 });
  const profile = select(["detect", "unified", "standard", "claude", "hal", "from_node", "entities", "memory", "heuristic"], "detect");
  const out = h("div", { id: "attach-result" });
  return h("form", { class: "card", id: "attach-form", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const kg = await post("kg/attach", { db_id: id.value.trim(), path: path.value.trim(), profile: profile.value === "detect" ? null : profile.value });
      location.hash = `#/workspace/${encodeURIComponent(kg.db_id)}`;
    } catch (err) { showError(err, out); }
  } }, h("h2", {}, "Attach a SQLite file"), h("p", { class: "muted long" }, `Read-only, from the server's disk, below: ${roots.join(", ")}`),
  id, " ", path, " ", profile, " ", h("button", { class: "primary" }, "Attach"), out);
}

function importForm(kgs) {
  const id = h("input", { type: "text", placeholder: "db_id", id: "import-db", required: true });
  const file = h("input", { type: "file", id: "import-file", required: true, "aria-label": "KG file to import" });
  const mode = select(["create", "merge", "replace"], "create");
  mode.setAttribute("aria-label", "import mode");
  const bar = h("progress", { class: "progress", max: 1, value: 0, hidden: true });
  const out = h("div", { id: "import-result" });
  const form = h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    if (!file.files.length) { append(out, message("Choose a file first.", "bad")); return; }
    const body = new FormData();
    body.append("file", file.files[0]);
    bar.hidden = false; bar.value = 0;
    try {
      const report = await upload(`kg/${encodeURIComponent(id.value.trim())}/import?mode=${mode.value}`, body, (p) => { bar.value = p; });
      bar.value = 1;
      append(out, h("p", { class: "ok" }, `Imported ${fmt(report.nodes ?? report.nodes_imported ?? 0)} nodes and ${fmt(report.edges ?? report.edges_imported ?? 0)} edges into '${id.value.trim()}'.`),
        h("a", { href: `#/workspace/${encodeURIComponent(id.value.trim())}` }, "Open it"));
    } catch (err) { bar.hidden = true; showError(err, out); }
  } }, h("h2", {}, "Import a file"), id, " ", file, " ", field("mode", mode), " ", h("button", { class: "primary" }, "Upload"), bar, out,
  h("p", { class: "muted" }, "Node-link JSON, JSON Lines, GraphML, CSV or a zip of nodes.csv + edges.csv (gzipped too)."));
  return form;
}

async function showDetail(el, dbId) {
  const db = encodeURIComponent(dbId);
  const [kg, report] = await Promise.all([get(`kg/${db}`), get(`kg/${db}/validate`)]);
  const s = kg.stats;
  append(el, h("h2", {}, `${kg.db_id}: ${kg.name || ""}`), h("p", { class: "muted long" }, kg.description || ""),
    h("div", { class: "row cards" },
      h("div", { class: "card" }, h("h3", {}, "Stats"), table(["", ""], [["nodes", fmt(s.nodes)], ["edges", fmt(s.edges)],
        ["orphans", fmt(s.orphans)], ["components", fmt(s.components)], ["largest component", fmt(s.largest_component)],
        ["density", fmt(s.density, 6)], ["degree (median / max)", `${fmt(s.total_degree.median)} / ${fmt(s.total_degree.max)}`]]),
        h("a", { href: `#/eval/${db}` }, "Charts of the types and degrees")),
      h("div", { class: "card" }, h("h3", {}, "Node types"), table(["type", "count"], Object.entries(s.node_types).map(([t, n]) => [t, fmt(n)]))),
      h("div", { class: "card" }, h("h3", {}, "Edge types"), table(["type", "count"], Object.entries(s.edge_types).map(([t, n]) => [t, fmt(n)])))),
    validation(dbId, report));
}

function validation(dbId, report) {
  const issues = new Map(report.issues.map((i) => [i.rule, i]));
  return h("div", { class: "card", id: "validation" }, h("h3", {}, `Validation: ${report.ok ? "passed" : `${report.errors} errors, ${report.warnings} warnings`}`),
    table(["rule", "severity", "check", "offenders"], report.rules.map((r) => [String(r.rule), r.severity, r.check,
      r.passed ? h("span", { class: "ok" }, "passed") : h("span", {}, `${fmt(r.count)}: `,
        (issues.get(r.rule)?.examples || []).map((ex) => [h("a", { href: `#/explore/${encodeURIComponent(dbId)}?node=${encodeURIComponent(ex)}`, class: "long" }, ex), " "]))])));
}
