// Research debugger (spec/004 "Debugger requirements"): runs of GET /api/research/runs; for one run
// the pipeline as eight stages with their status and clickable breakpoint markers, the controls
// (pause, resume, stop, step, restart iteration), an inspector of each stage's snapshot (input or
// output as a JSON tree with search and copy), confidence and coverage meters, the iteration
// timeline, the gaps by priority, the decision log, module configuration forms generated from each
// module's JSON Schema (hot swap on a live run), and a diff view against the run's replay or
// another run. A live run is polled every second; the inspector keeps its place.
import { get, post, send } from "../api.js";
import { append, bar, clear, field, fmt, h, message, select, table } from "../dom.js";
import { showError } from "../app.js";
import { schemaForm } from "../schemaform.js";
import { routeMissing, unavailable } from "../unavailable.js";

const STAGES = ["query", "search", "ingest", "extract", "merge", "store", "reason", "output"];
let poll = 0;

export async function render(root, route) {
  clearInterval(poll);
  append(root, h("h1", {}, "Research debugger"));
  let runs;
  try { runs = await get("research/runs", { limit: 50 }); }
  catch (err) { if (routeMissing(err)) { append(root, unavailable("Research runs", "/api/research")); return; } throw err; }
  if (route.args[0]) return detail(root, route.args[0], route.params, runs);
  const kgs = await get("kg");
  append(root, startForm(kgs), runs.length ? h("div", { class: "card" }, table(["run", "question", "status", "iterations", "confidence", "coverage", "stopped by"],
    runs.map((r) => [h("a", { href: `#/research/${encodeURIComponent(r.run_id)}` }, r.run_id), h("span", { class: "long" }, r.question), `${r.status}${r.live ? " (live)" : ""}`,
      fmt(r.iterations), fmt(r.confidence, 2), fmt(r.coverage, 2), r.stopped_by || ""]))) : message("No research runs yet."));
}

function startForm(kgs) {
  const question = h("input", { type: "text", size: 60, required: true, placeholder: "a research question", id: "research-question" });
  const boxes = kgs.map((k) => h("input", { type: "checkbox", value: k.db_id }));
  const iterations = h("input", { type: "number", min: 1, max: 100, value: 2 });
  const stops = STAGES.map((s) => h("input", { type: "checkbox", value: s, "aria-label": `breakpoint before ${s}` }));
  const out = h("div");
  return h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const started = await post("research/runs", { question: question.value.trim(), kgs: boxes.filter((b) => b.checked).map((b) => b.value),
        max_iterations: Number(iterations.value), store_mode: "propose", breakpoints: stops.filter((b) => b.checked).map((b) => b.value) });
      location.hash = `#/research/${encodeURIComponent(started.run_id)}`;
    } catch (err) { showError(err, out); }
  } }, h("h2", {}, "Start a run"), question, h("div", { class: "row" }, "KGs:", boxes.map((b) => h("label", {}, b, b.value)), field("iterations", iterations)),
  h("div", { class: "row" }, "Pause before:", stops.map((b) => h("label", {}, b, b.value))),
  h("p", { class: "muted" }, "New knowledge is proposed to the review queue (store mode 'propose')."), h("button", { class: "primary" }, "Start"), out);
}

async function detail(root, runId, params, runs) {
  const id = encodeURIComponent(runId);
  const ui = { runId, id, iteration: Number(params.get("it")) || 0, stage: params.get("stage") || "", side: params.get("side") || "output" };
  const head = h("div", { class: "card", id: "run-head" });
  const pipeline = h("div", { class: "card", id: "pipeline" });
  const inspector = h("div", { class: "card", id: "inspector" }, message("Click a stage of the pipeline to inspect its input and output."));
  const rest = h("div", { id: "run-rest" });
  append(root, h("p", {}, h("a", { href: "#/research" }, "All runs")), head, pipeline, h("div", { class: "grid2" }, inspector, h("div", { id: "side" })), rest);
  const m = await get(`research/runs/${id}`);
  paint(ui, m, head, pipeline, inspector);
  fillRest(ui, m, rest, runs);
  configForms(ui, m, document.getElementById("side"));
  if (m.live) poll = setInterval(async () => {
    if (!document.body.contains(head)) { clearInterval(poll); return; }
    try {
      const now = await get(`research/runs/${id}`);
      paint(ui, now, head, pipeline, inspector, true);
      if (!now.live) { clearInterval(poll); fillRest(ui, now, rest, runs); }
    } catch { /* the next tick tries again */ }
  }, 1000);
}

/** Status line, meters, controls and the pipeline strip (redrawn while the run is live). */
function paint(ui, m, head, pipeline, inspector, polled = false) {
  const fs = m.final_state || {};
  const last = [...(m.iterations || [])].reverse().find((it) => it.reasoning)?.reasoning || {};
  const confidence = fs.confidence ?? last.confidence ?? 0, coverage = fs.coverage ?? last.coverage ?? 0;
  const ctl = m.control || {};
  const out = h("div", { id: "control-result", role: "status" });
  const control = (action, label = action) => h("button", { type: "button", id: `ctl-${action}`, onclick: async () => {
    try { const r = await post(`research/runs/${ui.id}/control`, { action }); clear(out, message(`${label}: ${r.status || (r.paused ? "paused" : "running")}`, "ok")); if (action === "restart_iteration") setTimeout(() => dispatchEvent(new HashChangeEvent("hashchange")), 300); }
    catch (err) { clear(out); showError(err, out); }
  } }, label);
  clear(head, h("h2", { class: "long" }, m.query?.question || m.summary?.question || ui.runId),
    h("p", { id: "run-status" }, `${m.status}${m.live ? " (live)" : ""}${ctl.paused ? " · paused" : ""} · ${fmt((m.iterations || []).length)} iterations`
      + `${fs.convergence_reason ? ` · stopped by ${fs.convergence_reason}` : ""}`),
    h("div", { class: "meters" }, bar("confidence", confidence, 1, "graph"), bar("coverage", coverage, 1, "text")),
    h("div", { class: "row" }, m.live ? [control("pause"), control("resume"), control("step"), control("stop")] : null,
      control("restart_iteration", m.live ? "restart iteration" : "restart last iteration")), out);
  const states = m.module_states || {};
  const done = new Map();
  for (const it of m.iterations || []) for (const s of it.stages || []) done.set(s.stage, s);
  const marks = new Set(ctl.breakpoints || m.request?.breakpoints || []);
  clear(pipeline, h("h3", {}, "Pipeline"), h("div", { class: "pipeline" }, STAGES.map((stage) => {
    const st = states[stage]?.status || (done.get(stage)?.error ? "failed" : done.has(stage) ? "complete" : "idle");
    const marker = h("button", { type: "button", class: `bp${marks.has(stage) ? " on" : ""}`, id: `bp-${stage}`, title: m.live ? "breakpoint: pause before this stage" : "breakpoints act on a live run",
      "aria-label": `breakpoint before ${stage}`, "aria-pressed": String(marks.has(stage)), disabled: !m.live, onclick: async () => {
        const next = new Set(marks); next.has(stage) ? next.delete(stage) : next.add(stage);
        try { await send("PUT", `research/runs/${ui.id}/breakpoints`, { stages: [...next] }); marks.clear(); next.forEach((x) => marks.add(x)); paint(ui, { ...m, control: { ...ctl, breakpoints: [...next] } }, head, pipeline, inspector, polled); }
        catch (err) { showError(err, pipeline); }
      } }, "●");
    return h("div", { class: `stage ${st}${ui.stage === stage ? " selected" : ""}`, id: `stage-${stage}` }, marker,
      h("button", { type: "button", class: "stage-name", onclick: () => { ui.stage = stage; inspect(ui, m, inspector); paint(ui, m, head, pipeline, inspector, polled); } }, stage),
      h("small", {}, `${st}${done.get(stage) ? ` · ${fmt(done.get(stage).seconds, 2)} s` : ""}`));
  })));
  if (!polled && ui.stage) inspect(ui, m, inspector);
}

/** The inspector: one stage's snapshot, its input or output as a searchable JSON tree, copy. */
async function inspect(ui, m, where) {
  const its = (m.iterations || []).filter((it) => (it.stages || []).some((s) => s.stage === ui.stage));
  if (!its.length) { clear(where, h("h3", {}, `Inspector: ${ui.stage}`), message("This stage has not run yet.")); return; }
  if (!its.some((it) => it.iteration === ui.iteration)) ui.iteration = its[its.length - 1].iteration;
  clear(where, message("Loading the snapshot…"));
  let snap;
  try { snap = await get(`research/runs/${ui.id}/iterations/${ui.iteration}/stages/${ui.stage}`); }
  catch (err) { clear(where); showError(err, where); return; }
  const itSel = select(its.map((it) => [String(it.iteration), `iteration ${it.iteration}`]), String(ui.iteration));
  itSel.addEventListener("change", () => { ui.iteration = Number(itSel.value); inspect(ui, m, where); });
  const side = select([["input", "input"], ["output", "output"]], ui.side);
  side.id = "inspector-side";
  side.addEventListener("change", () => { ui.side = side.value; inspect(ui, m, where); });
  const value = snap[ui.side];
  const search = h("input", { type: "search", id: "inspector-search", placeholder: "search keys and values", size: 24 });
  const tree = h("div", { class: "json-tree", id: "inspector-tree" }, jsonTree(value, ""));
  const copied = h("span", { class: "muted", role: "status" });
  search.addEventListener("input", () => filterTree(tree, search.value.trim().toLowerCase()));
  clear(where, h("h3", {}, `Inspector: ${ui.stage} · ${snap.module_id} ${snap.module_version}`),
    h("div", { class: "row" }, field("iteration", itSel), field("show", side), search,
      h("button", { type: "button", id: "inspector-copy", onclick: async () => {
        try { await navigator.clipboard.writeText(JSON.stringify(value, null, 2)); copied.textContent = "copied"; }
        catch { copied.textContent = "the browser refused the clipboard"; }
      } }, "Copy JSON"), copied),
    h("p", { class: "muted" }, `status ${snap.status}${snap.error ? ` · ${snap.error}` : ""} · ${ui.side} ${(snap[`${ui.side}_sha256`] || "").slice(0, 19)}…`), tree);
}

/** A collapsible JSON tree built from text nodes (never HTML); long arrays show their first 200. */
function jsonTree(value, key, depth = 0) {
  const label = key === "" ? "" : `${key}: `;
  if (value === null || typeof value !== "object") {
    const text = typeof value === "string" ? JSON.stringify(value.length > 2000 ? `${value.slice(0, 2000)}…` : value) : String(value);
    return h("div", { class: "leaf", dataset: { text: `${key} ${text}`.toLowerCase() } }, h("b", {}, label), h("span", {}, text));
  }
  const entries = Array.isArray(value) ? value.slice(0, 200).map((v, i) => [String(i), v]) : Object.entries(value);
  const more = Array.isArray(value) && value.length > 200 ? h("div", { class: "muted" }, `… ${value.length - 200} more`) : null;
  return h("details", { open: depth < 2, dataset: { text: key.toLowerCase() } }, h("summary", {}, h("b", {}, label), Array.isArray(value) ? `[${value.length}]` : `{${entries.length}}`),
    h("div", { class: "kids" }, entries.map(([k, v]) => jsonTree(v, k, depth + 1)), more));
}

/** Show what matches ``q`` (a key or value containing it), everything under a matching key, and
 * the branches leading there (opened). */
function filterTree(tree, q) {
  const leaves = [...tree.querySelectorAll(".leaf")], branches = [...tree.querySelectorAll("details")];
  for (const el of [...leaves, ...branches]) el.hidden = false;
  if (!q) return;
  const match = (el) => el.dataset.text.includes(q);
  const underMatch = (el) => {
    for (let d = el.parentElement?.closest("details"); d && tree.contains(d); d = d.parentElement?.closest("details")) if (match(d)) return true;
    return false;
  };
  for (const leaf of leaves) leaf.hidden = !(match(leaf) || underMatch(leaf));
  for (const d of branches.reverse()) {
    const hit = match(d) || underMatch(d) || [...d.querySelectorAll(".leaf, details")].some((x) => !x.hidden);
    d.hidden = !hit;
    if (hit) d.open = true;
  }
}

/** Timeline, gaps, decisions, answer and the diff view (drawn once, and again when a run ends). */
function fillRest(ui, m, rest, runs) {
  const its = m.iterations || [];
  const total = Math.max(1e-6, ...its.map((it) => (it.stages || []).reduce((a, s) => a + (s.seconds || 0), 0)));
  const gaps = its.flatMap((it) => (it.reasoning?.gaps || []).map((g) => ({ ...g, iteration: it.iteration }))).sort((a, b) => (b.priority ?? 0) - (a.priority ?? 0));
  clear(rest,
    h("div", { class: "card", id: "timeline" }, h("h3", {}, "Iteration timeline"), its.map((it) => {
      const secs = (it.stages || []).reduce((a, s) => a + (s.seconds || 0), 0);
      const r = it.reasoning || {};
      const seg = h("div", { class: "seg" }); seg.style.width = `${Math.max(2, (100 * secs) / total)}%`;
      return h("div", { class: "tl-row" }, h("span", {}, `#${it.iteration} ${it.reason || ""}`), h("div", { class: "tl-track" }, seg),
        h("span", { class: "muted" }, `${fmt(secs, 2)} s · ${r.decision || "—"} · confidence ${fmt(r.confidence ?? 0, 2)} · coverage ${fmt(r.coverage ?? 0, 2)}`));
    })),
    h("div", { class: "card", id: "gaps" }, h("h3", {}, `Gaps by priority (${gaps.length})`), gaps.length ? table(["priority", "iteration", "type", "gap", "next query"], gaps.map((g) => [
      bar("", g.priority ?? 0, 1), String(g.iteration), h("span", { class: "tag" }, g.type || g.reason || ""), h("span", { class: "long" }, g.description || ""), h("span", { class: "muted long" }, g.query || "")])) : message("No gaps recorded.")),
    h("div", { class: "card", id: "decisions" }, h("h3", {}, "Decision log"), table(["iteration", "action", "by", "criterion", "rationale"],
      (m.decisions || []).map((d) => [fmt(d.iteration), d.action, d.by, d.criterion || "", h("span", { class: "long" }, d.rationale || "")]))),
    m.answer ? answer(m.answer) : null, diffTool(ui, runs));
}

/** Diff: the run against its replay (every stage's output hash re-computed), or against another run. */
function diffTool(ui, runs) {
  const out = h("div", { id: "diff-result" });
  const other = select([["", "another run…"], ...runs.filter((r) => r.run_id !== ui.runId).map((r) => [r.run_id, `${r.run_id} · ${r.question.slice(0, 40)}`])], "");
  other.id = "diff-other";
  return h("div", { class: "card", id: "diff" }, h("h3", {}, "Diff"), h("div", { class: "row" },
    h("button", { type: "button", id: "replay", onclick: async () => {
      clear(out, message("Replaying…"));
      try {
        const r = await post(`research/runs/${ui.id}/replay`, {});
        clear(out, h("p", { class: r.identical ? "ok" : "bad", id: "replay-verdict" }, r.identical ? "The replay reproduced every stage's output." : "The replay differs."),
          table(["iteration", "stage", "same output", "recorded", "replayed"], (r.stages || []).map((s) => [String(s.iteration ?? ""), s.stage, s.identical ?? s.same ? "yes" : h("b", { class: "bad" }, "no"),
            (s.recorded_sha256 || s.recorded || "").slice(7, 19), (s.replayed_sha256 || s.replayed || s.output_sha256 || "").slice(7, 19)])));
      } catch (err) { clear(out); showError(err, out); }
    } }, "Replay and compare"), other,
    h("button", { type: "button", id: "diff-runs", onclick: async () => {
      if (!other.value) return;
      clear(out, message("Comparing…"));
      try { diffTable(await get("research/diff", { a: ui.runId, b: other.value }), out); } catch (err) { clear(out); showError(err, out); }
    } }, "Compare runs")), out);
}

function diffTable(d, out) {
  const rows = d.stages || d.pairs || [];
  const first = d.first_difference;
  clear(out, h("p", { id: "diff-first" }, first ? `First difference: iteration ${first.iteration ?? "?"}, stage ${first.stage}` : "No difference."),
    table(["iteration", "stage", "config", "input", "output"], rows.map((s) => {
      const same = s.same || {};
      const mark = (k) => (same[k] === undefined ? "—" : same[k] ? "same" : h("b", { class: "bad" }, "differs"));
      return [String(s.iteration ?? ""), s.stage, mark("config_hash"), mark("input_hash"), mark("output_hash")];
    })));
}

/** Module configuration forms from each module's JSON Schema; on a live run, Apply hot-swaps. */
async function configForms(ui, m, where) {
  let mods;
  try { mods = await get("research/modules"); } catch (err) { showError(err, where); return; }
  const byId = new Map(mods.modules.map((x) => [x.id, x]));
  const current = m.modules || {};
  append(where, h("div", { class: "card", id: "module-config" }, h("h3", {}, "Modules"), h("p", { class: "muted" }, m.live ? "Apply validates the config against the module's JSON Schema and swaps it in: the stage's next call uses it." : "A finished run's configuration, from its manifest (Apply acts on a live run)."),
    STAGES.map((stage) => {
      const entry = current[stage] || {};
      const modId = entry.id || entry.module || mods.stages[stage];
      const mod = byId.get(modId);
      if (!mod) return null;
      const form = schemaForm(mod.config_schema || {}, {}, entry.config || {}, []);
      const out = h("div", { role: "status" });
      return h("details", { class: "module", id: `module-${stage}` }, h("summary", {}, `${stage}: ${modId}`),
        h("form", { onsubmit: async (e) => {
          e.preventDefault(); clear(out);
          let config;
          try { config = form.read(); } catch (err) { append(out, h("p", { class: "bad", role: "alert" }, `Not valid JSON: ${err.message}`)); return; }
          try { const r = await send("PUT", `research/runs/${ui.id}/modules/${stage}`, { module: modId, config }); clear(out, message(`Applied ${r.module} ${r.version}.`, "ok")); }
          catch (err) { showError(err, out); }
        } }, form.el, h("button", { disabled: !m.live }, "Apply (hot swap)"), out));
    })));
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
