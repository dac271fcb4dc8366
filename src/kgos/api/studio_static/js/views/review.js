// Review queue: proposed edges (link prediction, research, manual) with their evidence from
// GET /api/kg/{db}/predictions; accept / reject / undo one (POST .../{id}/accept|reject|undo),
// keyboard shortcuts (j/k move, a accept, r reject, u undo), batch by filter (POST .../review),
// and "Predict" (POST .../run) to fill the queue. A server without the API: "not available".
import { get, post } from "../api.js";
import { append, bar, clear, field, fmt, h, message, nodeLink, select } from "../dom.js";
import { showError } from "../app.js";
import { routeMissing, unavailable } from "../unavailable.js";

const PREDICTORS = ["common_neighbors", "adamic_adar", "resource_allocation", "ensemble"];
let keys = null;

export async function render(root, route) {
  if (keys) document.removeEventListener("keydown", keys);
  append(root, h("h1", {}, "Review queue"));
  const kgs = await get("kg");
  const dbId = route.args[0] || kgs[0]?.db_id;
  if (!dbId) { append(root, message("No KGs yet.", "bad")); return; }
  const p = route.params;
  const filter = { status: p.get("status") || "pending", origin: p.get("origin") || undefined, relation: p.get("relation") || undefined,
    min_confidence: p.get("min_confidence") || undefined, limit: 50 };
  const db = encodeURIComponent(dbId);
  let page;
  try { page = await get(`kg/${db}/predictions`, filter); }
  catch (err) { if (routeMissing(err)) { append(root, unavailable("Review queue", "/api/kg/{db_id}/predictions")); return; } throw err; }
  const go = (changes) => { location.hash = `#/review/${encodeURIComponent(changes.db || dbId)}?` + new URLSearchParams(Object.entries({ ...filter, ...changes, db: undefined, limit: undefined }).filter(([, v]) => v !== undefined && v !== "")); };
  const kgSel = select(kgs.map((k) => k.db_id), dbId);
  kgSel.addEventListener("change", () => go({ db: kgSel.value }));
  const origin = h("input", { type: "text", value: filter.origin || "", placeholder: "origin (predictor)", size: 16 });
  const relation = h("input", { type: "text", value: filter.relation || "", placeholder: "relation", size: 14 });
  const minConf = h("input", { type: "number", min: 0, max: 1, step: 0.05, value: filter.min_confidence || "", placeholder: "min confidence" });
  const out = h("div", { id: "review-status", role: "status" });
  append(root,
    h("div", { class: "row card" }, field("KG", kgSel), ["pending", "accepted", "rejected", "all"].map((s) =>
      h("a", { href: "#", class: s === filter.status ? "tag selected" : "tag", onclick: (e) => { e.preventDefault(); go({ status: s }); } },
        `${s} (${s === "all" ? fmt(Object.values(page.counts).reduce((a, b) => a + b, 0)) : fmt(page.counts[s] ?? 0)})`))),
    h("form", { class: "row card", onsubmit: (e) => { e.preventDefault(); go({ origin: origin.value.trim(), relation: relation.value.trim(), min_confidence: minConf.value }); } },
      origin, relation, minConf, h("button", {}, "Filter"),
      filter.status === "pending" ? [h("button", { type: "button", id: "accept-all", onclick: () => batch("accept") }, "Accept all matching"),
        h("button", { type: "button", class: "danger", onclick: () => batch("reject") }, "Reject all matching")] : null),
    predictForm(db, out), out,
    h("p", { class: "muted" }, "Keys: ", h("kbd", {}, "j"), "/", h("kbd", {}, "k"), " move, ", h("kbd", {}, "a"), " accept, ", h("kbd", {}, "r"), " reject, ", h("kbd", {}, "u"), " undo."));
  const list = h("div", { id: "proposals" });
  append(root, list);
  if (!page.proposals.length) append(list, message(`No ${filter.status} proposals${filter.origin || filter.relation || filter.min_confidence ? " matching the filter" : ""}. Press Predict to propose edges.`));
  const cards = page.proposals.map((pr) => card(dbId, pr, out));
  append(list, cards.map((c) => c.el));
  let at = 0;
  const focus = (i) => { if (!cards.length) return; at = Math.max(0, Math.min(cards.length - 1, i)); cards.forEach((c, j) => c.el.classList.toggle("selected", j === at)); cards[at].el.scrollIntoView({ block: "nearest" }); };
  focus(0);
  keys = (e) => {
    if (e.target.closest("input, textarea, select") || e.ctrlKey || e.metaKey || e.altKey || !location.hash.startsWith("#/review")) return;
    const act = { a: "accept", r: "reject", u: "undo" }[e.key];
    if (e.key === "j") focus(at + 1);
    else if (e.key === "k") focus(at - 1);
    else if (act && cards.length) { e.preventDefault(); cards[at].act(act).then(() => focus(at + 1)); }
  };
  document.addEventListener("keydown", keys);

  async function batch(decision) {
    const what = [filter.origin && `origin ${filter.origin}`, filter.relation && `relation ${filter.relation}`, filter.min_confidence && `confidence >= ${filter.min_confidence}`].filter(Boolean).join(", ") || "no filter";
    if (!confirm(`${decision} every pending proposal matching (${what})? Undo works one by one.`)) return;
    try {
      const done = await post(`kg/${db}/predictions/review`, { decision, origin: filter.origin, relation: filter.relation, min_confidence: filter.min_confidence ? Number(filter.min_confidence) : null });
      clear(out, h("p", { class: "ok" }, `${decision === "accept" ? "Accepted" : "Rejected"} ${done.length} proposals.`));
      setTimeout(() => go({}), 600);
    } catch (err) { showError(err, out); }
  }
}

function predictForm(db, out) {
  const predictor = select(PREDICTORS, "common_neighbors");
  const k = h("input", { type: "number", min: 1, max: 1000, value: 20 });
  return h("form", { class: "row card", onsubmit: async (e) => {
    e.preventDefault(); clear(out, message("Predicting…"));
    try {
      const r = await post(`kg/${db}/predictions/run`, { predictor: predictor.value, k: Number(k.value), per_node: 5 });
      const q = r.queued || { added: [], merged: [] };
      clear(out, h("p", { class: "ok" }, `${r.predictor}: ${fmt(r.predictions.length)} predictions, ${fmt(q.added.length)} new in the queue, ${fmt(q.merged.length)} already pending (scores merged), ${fmt(q.skipped_rejected)} rejected before (not proposed again).`));
      setTimeout(() => dispatchEvent(new HashChangeEvent("hashchange")), 600);
    } catch (err) { clear(out); showError(err, out); }
  } }, h("b", {}, "Propose missing edges: "), field("predictor", predictor), field("top", k), h("button", { class: "primary" }, "Predict"));
}

function evidence(ev) {
  const shared = ev.shared_neighbors || [];
  const rest = Object.entries(ev).filter(([k]) => k !== "shared_neighbors" && k !== "similar_edges");
  return h("details", {}, h("summary", {}, "evidence"),
    shared.length ? h("p", { class: "long" }, `shared neighbours: ${shared.join(", ")}`) : null,
    (ev.similar_edges || []).length ? h("p", { class: "long" }, `similar edges: ${ev.similar_edges.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join("; ")}`) : null,
    rest.map(([k, v]) => h("div", { class: "long muted" }, `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`)));
}

/** An edge proposal as source —type→ target; a node proposal (the gap report's) as the node it would add. */
function subject(dbId, pr) {
  if (pr.kind !== "node") return [nodeLink(dbId, pr.source), h("span", { class: "tag" }, `—${pr.type}→`), nodeLink(dbId, pr.target)];
  return [h("span", { class: "tag" }, "new node"), h("b", { class: "long" }, pr.payload?.name || pr.source), h("span", { class: "muted" }, `${pr.type} · ${pr.source}`)];
}

function card(dbId, pr, out) {
  const db = encodeURIComponent(dbId);
  const status = h("span", { class: "tag status" }, pr.status);
  const el = h("div", { class: "card proposal", dataset: { id: String(pr.id) } },
    h("div", { class: "row" }, h("b", {}, `#${pr.id}`), subject(dbId, pr), h("span", { class: "tag" }, pr.origin), status),
    pr.kind === "node" && pr.payload?.description ? h("p", { class: "muted long" }, pr.payload.description) : null,
    bar("confidence", pr.confidence ?? pr.score, 1),
    pr.llm_verdict !== null ? h("p", { class: "muted long" }, `LLM (${pr.llm_model || ""}): ${pr.llm_verdict ? "valid" : "invalid"} — ${pr.llm_reasoning || ""}`) : null,
    evidence(pr.evidence || {}),
    h("div", { class: "row" }, h("button", { class: "primary", onclick: () => act("accept") }, "Accept"), h("button", { class: "danger", onclick: () => act("reject") }, "Reject"),
      h("button", { onclick: () => act("undo") }, "Undo")));
  async function act(what) {
    try {
      const r = await post(`kg/${db}/predictions/${pr.id}/${what}`, {});
      status.textContent = r.status;
      el.classList.toggle("muted", r.status === "rejected");
      const thing = pr.kind === "node" ? `the node ${pr.payload?.name || pr.source}` : `the edge ${pr.source} —${pr.type}→ ${pr.target}`;
      clear(out, h("p", { class: "ok" }, what === "accept" ? `#${pr.id} accepted: ${thing} is in the KG${r.promoted ? "" : " (it existed already)"}.`
        : what === "reject" ? `#${pr.id} rejected: it will not be proposed again.` : `#${pr.id} is pending again (an edge its acceptance created is removed).`));
      pr.status = r.status;
    } catch (err) { clear(out); showError(err, out); }
  }
  return { el, act };
}
