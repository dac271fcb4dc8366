// Research runs (spec/004): the runs of GET /api/research/runs; one run's iterations, stages
// (module, status, seconds), reasoning gaps and decisions with rationale, and its answer; live
// runs can be paused, resumed, stepped or stopped (POST .../control). Start a run on some KGs.
import { get, post } from "../api.js";
import { append, clear, field, fmt, h, message, table } from "../dom.js";
import { showError } from "../app.js";
import { routeMissing, unavailable } from "../unavailable.js";

export async function render(root, route) {
  append(root, h("h1", {}, "Research runs"));
  let runs;
  try { runs = await get("research/runs", { limit: 50 }); }
  catch (err) { if (routeMissing(err)) { append(root, unavailable("Research runs", "/api/research")); return; } throw err; }
  if (route.args[0]) return detail(root, route.args[0]);
  const kgs = await get("kg");
  append(root, startForm(kgs), runs.length ? h("div", { class: "card" }, table(["run", "question", "status", "iterations", "confidence", "coverage", "stopped by"],
    runs.map((r) => [h("a", { href: `#/research/${encodeURIComponent(r.run_id)}` }, r.run_id), h("span", { class: "long" }, r.question), `${r.status}${r.live ? " (live)" : ""}`,
      fmt(r.iterations), fmt(r.confidence, 2), fmt(r.coverage, 2), r.stopped_by || ""]))) : message("No research runs yet."));
}

function startForm(kgs) {
  const question = h("input", { type: "text", size: 60, required: true, placeholder: "a research question", id: "research-question" });
  const boxes = kgs.map((k) => h("input", { type: "checkbox", value: k.db_id }));
  const iterations = h("input", { type: "number", min: 1, max: 100, value: 2 });
  const out = h("div");
  return h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const started = await post("research/runs", { question: question.value.trim(), kgs: boxes.filter((b) => b.checked).map((b) => b.value),
        max_iterations: Number(iterations.value), store_mode: "propose" });
      location.hash = `#/research/${encodeURIComponent(started.run_id)}`;
    } catch (err) { showError(err, out); }
  } }, h("h2", {}, "Start a run"), question, h("div", { class: "row" }, "KGs:", boxes.map((b) => h("label", {}, b, b.value)), field("iterations", iterations)),
  h("p", { class: "muted" }, "New knowledge is proposed to the review queue (store mode 'propose')."), h("button", { class: "primary" }, "Start"), out);
}

async function detail(root, runId) {
  const id = encodeURIComponent(runId);
  const m = await get(`research/runs/${id}`);
  const out = h("div");
  const control = (action) => h("button", { onclick: async () => { try { await post(`research/runs/${id}/control`, { action }); dispatchEvent(new HashChangeEvent("hashchange")); } catch (err) { showError(err, out); } } }, action);
  append(root, h("p", {}, h("a", { href: "#/research" }, "All runs")),
    h("div", { class: "card" }, h("h2", { class: "long" }, m.query?.question || m.summary?.question || runId),
      h("p", {}, `${m.status}${m.live ? " (live)" : ""} · ${fmt(m.final_state?.iterations ?? m.iterations.length)} iterations · confidence ${fmt(m.final_state?.confidence ?? 0, 2)} · coverage ${fmt(m.final_state?.coverage ?? 0, 2)}`),
      m.live ? h("div", { class: "row" }, ["pause", "resume", "step", "stop"].map(control)) : null, out),
    m.answer ? answer(m.answer) : null,
    m.iterations.map((it) => h("details", { class: "card", open: true }, h("summary", {}, `Iteration ${it.iteration}: ${it.reason || ""}`),
      table(["stage", "module", "status", "seconds", "metrics"], (it.stages || []).map((s) => [s.stage, s.module, s.error ? h("span", { class: "bad" }, `${s.status}: ${s.error}`) : s.status,
        fmt(s.seconds, 3), h("span", { class: "long muted" }, JSON.stringify(s.metrics || {}))])),
      it.reasoning ? h("div", {}, h("h3", {}, `Reasoning: ${it.reasoning.decision || ""} (${it.reasoning.criterion || ""})`),
        (it.reasoning.gaps || []).map((g) => h("div", { class: "long" }, h("span", { class: "tag" }, g.type), `${g.description} `, h("span", { class: "muted" }, `→ ${g.query}`)))) : null)),
    h("div", { class: "card" }, h("h3", {}, "Decisions"), table(["iteration", "action", "by", "criterion", "rationale"],
      (m.decisions || []).map((d) => [fmt(d.iteration), d.action, d.by, d.criterion || "", h("span", { class: "long" }, d.rationale || "")]))));
}

/** The run's answer text and its numbered citations (claim -> KG node or corpus source). */
function answer(a) {
  const text = typeof a === "string" ? a : a.answer || "";
  const cites = typeof a === "string" ? [] : a.citations || [];
  return h("div", { class: "card" }, h("h3", {}, "Answer"), h("p", { class: "long msg" }, text),
    cites.length ? h("details", {}, h("summary", {}, `${cites.length} citations`), table(["n", "source", "authority"], cites.map((c) => [
      String(c.n), c.kg_node ? h("a", { href: `#/explore/${encodeURIComponent(c.kg_node.db)}?node=${encodeURIComponent(c.kg_node.id)}`, class: "long" }, c.source) : h("span", { class: "long" }, c.source || ""),
      c.authority || ""]))) : null);
}
