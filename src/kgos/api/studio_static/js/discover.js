// spec/003's explore page inside the explorer: predicted edges drawn on the graph (green, dashed),
// accepted or rejected from the graph, and the two-node validate mode (pick two nodes: the
// predictors' best relation between them, then an LLM's verdict). Everything goes through the
// review queue's API, so each promoted edge carries its provenance (prediction id, origin,
// confidence) like one accepted on the Review page.
import { get, post } from "./api.js";
import { append, bar, clear, fmt, h, message } from "./dom.js";
import { showError } from "./app.js";

const ORIGIN = "studio";
const PAIR_K = 200;  // predictions of the first node searched for the second

const db = (ctx) => encodeURIComponent(ctx.dbId);
export const predId = (p) => `p:${p.source}|${p.type}|${p.target}`;

/** Draw predictions (from discover, or pending proposals) as dashed edges; ends not drawn are added. */
async function drawPredictions(ctx, predictions) {
  const cy = ctx.cy();
  const missing = [...new Set(predictions.flatMap((p) => [p.source, p.target]))].filter((id) => cy.getElementById(id).empty());
  const nodes = await Promise.all(missing.map((id) => get(`kg/${db(ctx)}/nodes/${encodeURIComponent(id).replace(/%2F/g, "/")}`).catch(() => null)));
  const anchor = cy.getElementById(predictions[0]?.source).position() || { x: 0, y: 0 };
  cy.add(nodes.filter(Boolean).map((n, i) => ({ group: "nodes", data: ctx.nodeData({ ...n, depth: 2, degree: 0 }),
    position: { x: anchor.x + 120 * Math.cos(i), y: anchor.y + 120 * Math.sin(i) } })));
  for (const p of predictions) {
    if (cy.getElementById(p.source).empty() || cy.getElementById(p.target).empty()) continue;
    const el = cy.getElementById(predId(p));
    const data = { id: predId(p), source: p.source, target: p.target, type: p.type, colour: "#12b76a", prediction: p };
    if (el.nonempty()) el.data(data); else cy.add({ group: "edges", data, classes: "pred" });
  }
  ctx.refresh();
}

/** "Predict missing edges" of a node: the predictors' top k, drawn. */
export async function discover(ctx, id, out, k = 8) {
  clear(out, message("Predicting…"));
  try {
    const r = await post(`kg/${db(ctx)}/predictions/discover`, { node: id, k });
    await drawPredictions(ctx, r.predictions);
    clear(out, message(`${r.predictions.length} predicted edges drawn dashed green: click one to accept or reject it.`));
  } catch (err) { clear(out); showError(err, out); }
}

/** The pending proposals touching a node, drawn (they keep their queue ids). */
export async function pending(ctx, id, out) {
  try {
    const page = await get(`kg/${db(ctx)}/predictions`, { status: "pending", node: id, limit: 50 });
    await drawPredictions(ctx, page.proposals);
    clear(out, message(`${page.proposals.length} pending proposals drawn.`));
  } catch (err) { clear(out); showError(err, out); }
}

/** The queue id of a prediction: a proposal's own, or a new pending one staged with its evidence. */
async function staged(ctx, p) {
  if (p.id) return p.id;
  const r = await post(`kg/${db(ctx)}/predictions`, { source: p.source, target: p.target, type: p.type, origin: ORIGIN,
    score: p.score || 0, scores: p.scores || {}, evidence: p.evidence || {} });
  const id = r.added[0] || r.merged[0];
  if (!id) throw new Error(r.skipped_rejected ? "this edge was rejected before: it is not proposed again" : "this edge exists already");
  p.id = id;
  return id;
}

/** The panel of a predicted edge: score, signals, evidence; accept, reject, ask the LLM. */
export function showPrediction(ctx, edge, panel) {
  const p = edge.data("prediction");
  const out = h("div", { id: "prediction-result", role: "status" });
  const name = (id) => ctx.cy().getElementById(id).data("name") || id;
  const ev = p.evidence || {};
  clear(panel, h("h2", { id: "prediction-title", class: "long" }, `${name(p.source)} —${p.type}→ ${name(p.target)}`),
    h("p", {}, h("span", { class: "tag ok" }, "predicted"), ` score ${fmt(p.score ?? p.confidence ?? 0)}`, p.id ? ` · proposal #${p.id}` : ""),
    Object.entries(p.scores || {}).map(([k, v]) => bar(k, v, Math.max(1, ...Object.values(p.scores)))),
    ev.shared_neighbors?.length ? h("p", { class: "long" }, `Shared neighbours: ${ev.shared_neighbors.map(name).join(", ")}`) : null,
    (ev.rules || []).map((r) => h("p", { class: "muted long" }, `Rule ${r.path.join(" · ")} (confidence ${fmt(r.confidence)})`)),
    h("div", { class: "row" }, h("button", { class: "primary", id: "accept-prediction", onclick: () => decide(ctx, edge, "accept", out) }, "Accept"),
      h("button", { class: "danger", id: "reject-prediction", onclick: () => decide(ctx, edge, "reject", out) }, "Reject"),
      h("button", { id: "validate-prediction", onclick: () => validate(ctx, p, out) }, "Ask the LLM")), out);
}

async function decide(ctx, edge, action, out) {
  clear(out);
  const p = edge.data("prediction");
  try {
    const id = await staged(ctx, p);
    const done = await post(`kg/${db(ctx)}/predictions/${id}/${action}`, { reviewer: "studio" });
    const cy = ctx.cy();
    edge.remove();
    if (action === "accept") cy.add({ group: "edges", data: ctx.edgeData(done.source, done.type, done.target) });
    ctx.refresh();
    // Said under the graph (the panel then shows the source node, whose edge list names the proposal).
    const status = document.getElementById("explore-status") || out;
    clear(status, message(action === "accept" ? `Accepted: the edge is in the KG (proposal #${id}).` : `Rejected: it will not be proposed again (proposal #${id}).`, "ok"));
    if (action === "accept") await ctx.showNode(done.source);
  } catch (err) { showError(err, out); }
}

async function validate(ctx, p, out) {
  clear(out, message("Asking the LLM…"));
  try {
    const id = await staged(ctx, p);
    const v = await post(`kg/${db(ctx)}/predictions/${id}/validate`, {});
    const verdict = v.valid === true ? "valid" : v.valid === false ? "not valid" : `no verdict (${v.error || "the model did not answer"})`;
    clear(out, h("div", { class: "card", id: "verdict" }, h("b", {}, `LLM verdict: ${verdict}`),
      v.confidence !== null && v.confidence !== undefined ? ` (confidence ${fmt(v.confidence)}, ${v.model})` : ` (${v.model || "no model"})`,
      h("p", { class: "long" }, v.reasoning || "")));
  } catch (err) { clear(out); showError(err, out); }
}

/** Two-node validate mode: the next two nodes clicked are the pair. */
export function pairMode(ctx, out) {
  const picked = [];
  clear(out, message("Validate a pair: click the first node, then the second."));
  ctx.onPick((id) => {
    picked.push(id);
    if (picked.length === 1) { clear(out, message(`First: ${ctx.cy().getElementById(id).data("name")}. Now click the second node.`)); return false; }
    pair(ctx, picked[0], picked[1], out);
    return true;  // done picking
  });
}

/** The best predicted relation between two nodes (either direction), drawn, with its panel. */
export async function pair(ctx, a, b, out) {
  clear(out, message("Scoring the pair…"));
  try {
    const r = await post(`kg/${db(ctx)}/predictions/discover`, { node: a, k: PAIR_K });
    const hits = r.predictions.filter((p) => (p.source === a && p.target === b) || (p.source === b && p.target === a));
    const names = [a, b].map((id) => ctx.cy().getElementById(id).data("name") || id).join(" and ");
    if (!hits.length) { clear(out, h("p", { id: "pair-result" }, `No relation between ${names} is among the ${PAIR_K} best predictions for the first: the predictors see no missing edge.`)); return; }
    await drawPredictions(ctx, [hits[0]]);
    clear(out, h("p", { id: "pair-result" }, `Best predicted relation between ${names}: ${hits[0].type} (score ${fmt(hits[0].score)}, rank ${hits[0].rank} of the first node's predictions).`));
    const edge = ctx.cy().getElementById(predId(hits[0]));
    ctx.showPrediction(edge);
    await validate(ctx, edge.data("prediction"), document.getElementById("prediction-result"));
  } catch (err) { clear(out); showError(err, out); }
}

/** How an edge got into the KG, for the node panel's edge list: a promoted proposal says so. */
export function provenance(edge) {
  const pr = edge.properties || {};
  if (pr.prediction_id === undefined) return "";
  return `prediction #${pr.prediction_id}${pr.source ? ` · ${pr.source}` : ""}${pr.confidence !== undefined ? ` · ${fmt(pr.confidence)}` : ""}`;
}
