// Learning from use (issue 35), for one KG and one of its experts: the gap report
// (GET/POST /api/gaps/{db}), dimension drift alerts (GET /api/drift/{db}), A/B tests of the expert
// (GET /api/ab, GET /api/ab/{id}, POST /api/experts/{id}/ab, POST /api/ab/{id}/stop), cross-KG links
// (GET/POST/DELETE /api/links) and the thumbs up/down per expert (GET /api/feedback summary).
// Route: #/learning/<db>/<tab>?expert=<id>. Every piece of API text is set as text (dom.js).
import { get, post, send } from "../api.js";
import { append, clear, field, fmt, h, message, nodeLink, select, table } from "../dom.js";
import { showError } from "../app.js";

const TABS = [["gaps", "Gap report"], ["drift", "Dimension drift"], ["ab", "A/B tests"], ["links", "Cross-KG links"]];

export async function render(root, route) {
  append(root, h("h1", {}, "Learning from use"));
  const [kgs, experts] = await Promise.all([get("kg"), get("experts")]);
  const dbId = route.args[0] || kgs[0]?.db_id;
  if (!dbId) { append(root, message("No KGs yet.", "bad")); return; }
  if (!kgs.some((k) => k.db_id === dbId)) {
    append(root, h("div", { class: "card bad", role: "alert" }, `No KG named '${dbId}'. The KGs: `,
      kgs.map((k, i) => [i ? ", " : "", h("a", { href: `#/learning/${encodeURIComponent(k.db_id)}` }, k.db_id)])));
    return;
  }
  const tab = TABS.some(([t]) => t === route.args[1]) ? route.args[1] : "gaps";
  const mine = experts.filter((x) => (x.kg_db_ids?.length ? x.kg_db_ids : [x.kg_db_id]).includes(dbId));
  const expertId = mine.some((x) => x.id === route.params.get("expert")) ? route.params.get("expert") : mine[0]?.id;
  const go = (db, t, ex) => { location.hash = `#/learning/${encodeURIComponent(db)}/${t}${ex ? `?expert=${encodeURIComponent(ex)}` : ""}`; };
  const kgSel = select(kgs.map((k) => k.db_id), dbId);
  kgSel.addEventListener("change", () => go(kgSel.value, tab));
  const exSel = select(mine.map((x) => [x.id, x.name]), expertId);
  exSel.addEventListener("change", () => go(dbId, tab, exSel.value));
  append(root, h("div", { class: "row card" }, field("KG", kgSel), mine.length ? field("Expert", exSel) : h("span", { class: "muted" }, "no expert uses this KG"),
    h("nav", { class: "tabs", "aria-label": "Learning views" }, TABS.map(([t, label]) =>
      h("a", { href: `#/learning/${encodeURIComponent(dbId)}/${t}${expertId ? `?expert=${encodeURIComponent(expertId)}` : ""}`,
        class: t === tab ? "tag selected" : "tag", "aria-current": t === tab ? "page" : null, dataset: { tab: t } }, label))),
    h("a", { href: `#/review/${encodeURIComponent(dbId)}` }, "Review queue")));
  append(root, await feedbackCard(mine));
  const body = h("div", { id: "learning-body" });
  append(root, body);
  const views = { gaps: gapView, drift: driftView, ab: abView, links: linksView };
  await views[tab](body, dbId, mine.find((x) => x.id === expertId), route.params);
}

// -- feedback -----------------------------------------------------------------------------------------
async function feedbackCard(experts) {
  if (!experts.length) return null;
  const sums = await Promise.all(experts.map((x) => get("feedback", { expert_id: x.id, limit: 1 }).then((r) => r.summary)));
  return h("div", { class: "card row", id: "feedback-summary" }, h("b", {}, "Feedback"), experts.map((x, i) => h("span", { class: "fb", dataset: { expert: x.id } },
    h("a", { href: `#/experts/${encodeURIComponent(x.id)}` }, x.name), " ", h("span", { class: "ok", title: "thumbs up" }, `▲ ${fmt(sums[i].up)}`), " ",
    h("span", { class: "bad", title: "thumbs down" }, `▼ ${fmt(sums[i].down)}`),
    h("span", { class: "muted" }, ` ${pct(sums[i].positive_rate)} positive, ${fmt(sums[i].with_comment)} with a comment`))));
}

const pct = (x) => (x === null || x === undefined ? "—" : `${(100 * x).toFixed(1)}%`);
const CAUSES = { no_matching_node: "no matching node", retrieval_misconfigured: "retrieval misconfigured", content_insufficient: "content insufficient" };
const cause = (c) => h("span", { class: `tag cause ${c}` }, CAUSES[c] || c);

// -- gaps ---------------------------------------------------------------------------------------------
async function gapView(body, dbId) {
  const db = encodeURIComponent(dbId);
  const out = h("div", { id: "gap-status", role: "status" });
  const report = await get(`gaps/${db}`);
  const button = h("button", { class: "primary", id: "gaps-propose", disabled: !report.suggestions.some((s) => s.kind === "node") }, "Send suggested nodes to the review queue");
  button.addEventListener("click", async () => {
    button.disabled = true; clear(out, message("Writing the proposals…"));
    try {
      const done = await post(`gaps/${db}`);
      const ids = done.suggestions.filter((s) => s.proposal_id !== null).map((s) => s.proposal_id);
      clear(out, h("p", { class: "ok" }, `${fmt(ids.length)} proposal(s) in the review queue (${ids.map((i) => `#${i}`).join(", ")}). `,
        h("a", { href: `#/review/${db}?origin=gaps` }, "Review them")));
      fill(done);
    } catch (err) { clear(out); showError(err, out); button.disabled = false; }
  });
  const shown = h("div");
  const summary = h("div");
  append(body, h("div", { class: "card" }, h("h2", {}, "Gap report"),
    h("p", { class: "muted" }, "Questions the experts over this KG failed: a thumbs down, an answer that found nothing, a question off the KG. Reading it writes nothing."),
    h("div", { class: "row" }, button, h("a", { href: `#/review/${db}?origin=gaps&status=all` }, "Gap proposals in the review queue")), out, summary), shown);
  fill(report);

  function fill(r) {
    const topics = new Map(r.topics.map((t) => [t.id, t]));
    clear(summary, h("p", { class: "muted", id: "gap-summary" }, `${fmt(r.turns)} turns read, ${fmt(r.failures.length)} failures `,
        Object.entries(r.causes).map(([c, n]) => [cause(c), `× ${fmt(n)} `]),
        r.calibration && r.calibration.off_kg !== null ? h("span", { title: r.calibration.rule }, `· best cosine off the KG below ${fmt(r.calibration.off_kg)}, weak below ${fmt(r.calibration.weak)} (${r.calibration.model})`) : ""));
    clear(shown,
      h("div", { class: "card" }, h("h3", {}, `Failures (${r.failures.length})`), r.failures.length
        ? table(["question", "n", "cause", "topic", "why", "best match", "comment"], grouped(r.failures).map(({ f, n, comments }) => [
          h("span", { class: "long gap-query" }, f.query), h("span", { class: "nowrap" }, `× ${fmt(n)}`), cause(f.cause), topics.get(f.topic)?.label || "", (f.reasons || []).join(", ").replace(/_/g, " "),
          bestMatch(dbId, f), h("span", { class: "long" }, comments.join(" · "))]))
        : message("No failures: nobody rated an answer down and every question found its nodes.")),
      h("div", { class: "card" }, h("h3", {}, `Suggestions (${r.suggestions.length})`), r.suggestions.length
        ? table(["kind", "topic", "suggestion", "proposal"], r.suggestions.map((s) => [s.kind, topics.get(s.topic)?.label || "",
          h("span", { class: "long" }, s.text), s.proposal_id !== null ? h("a", { href: `#/review/${encodeURIComponent(dbId)}?origin=gaps&status=all` }, `#${s.proposal_id}`) : h("span", { class: "muted nowrap" }, "not proposed")]))
        : message("Nothing to suggest.")));
  }
}

function bestMatch(dbId, f) {
  if (f.found?.node) {
    const fixed = f.cause === "retrieval_misconfigured" && f.found.fixed_by ? `; rank ${f.found.ranks?.[f.found.fixed_by]} with ${f.found.fixed_by} weights` : "";
    return h("span", {}, nodeLink(dbId, f.found.node), ` rank ${f.found.rank ?? "past the limit"}${fixed}`);
  }
  if (f.evidence?.best_node) return h("span", {}, nodeLink(dbId, f.evidence.best_node), ` cosine ${fmt(f.evidence.best_cosine, 2)}`);
  return "";
}

/** The same question failing the same way n times is one row (its distinct comments joined). */
function grouped(failures) {
  const rows = new Map();
  for (const f of failures) {
    const key = JSON.stringify([f.query, f.cause, f.topic, f.found?.node || f.evidence?.best_node || ""]);
    const row = rows.get(key) || rows.set(key, { f, n: 0, comments: [] }).get(key);
    row.n += 1;
    if (f.comment && !row.comments.includes(f.comment)) row.comments.push(f.comment);
  }
  return [...rows.values()];
}

// -- drift --------------------------------------------------------------------------------------------
async function driftView(body, dbId, _expert, params) {
  const days = Number(params.get("days")) || 90;
  const r = await get(`drift/${encodeURIComponent(dbId)}`, { days });
  const input = h("input", { type: "number", min: 1, max: 3650, value: days, id: "drift-days" });
  append(body, h("div", { class: "card" }, h("h2", {}, "Dimension drift alerts"),
    h("p", { class: "muted" }, "Dimension values that use contradicts: a user's statement reads the other way, or an expert's filter excludes a node people used. Nothing is changed: edit the node in the explorer."),
    h("form", { class: "row", onsubmit: (e) => { e.preventDefault(); location.hash = `#/learning/${encodeURIComponent(dbId)}/drift?days=${Number(input.value) || 90}${params.get("expert") ? `&expert=${encodeURIComponent(params.get("expert"))}` : ""}`; } },
      field("days back", input), h("button", {}, "Show"),
      h("span", { class: "muted" }, `${fmt(r.turns_read)} turns read since ${(r.since || "").slice(0, 10)}, ${fmt(r.experts_with_filters)} expert(s) with dimension filters.`))),
  h("div", { class: "card", id: "drift-alerts" }, r.alerts.length
    ? table(["node", "dimension", "value", "set by", "kind", "evidence"], r.alerts.map((a) => [
      nodeLink(dbId, { id: a.node, name: a.name || a.node }), a.dimension, fmt(a.value, 2), a.set_by || "", h("span", { class: "tag" }, a.kind.replace(/_/g, " ")),
      h("div", {}, a.expert ? h("div", { class: "muted" }, `expert ${a.expert}, bound ${JSON.stringify(a.bound)}`) : null,
        a.evidence.map((e) => h("div", { class: "evidence long" }, h("span", { class: "tag" }, e.kind), `“${e.text || e.ref}”`,
          h("span", { class: "muted" }, ` reads ${fmt(e.value, 2)}, ${(e.at || "").slice(0, 16).replace("T", " ")}`))))]))
    : message("No drift: nothing said or used contradicts a dimension value.")));
}

// -- A/B tests ----------------------------------------------------------------------------------------
async function abView(body, dbId, expert, params) {
  if (!expert) { append(body, message("No expert uses this KG: create one in Experts to test its retrieval.")); return; }
  const eid = encodeURIComponent(expert.id);
  const { tests } = await get("ab", { expert_id: expert.id });
  const pick = tests.find((t) => t.id === params.get("test")) || tests.find((t) => t.status === "active") || tests[0];
  const out = h("div", { role: "status", id: "ab-status" });
  const link = (t) => `#/learning/${encodeURIComponent(dbId)}/ab?expert=${eid}&test=${encodeURIComponent(t.id)}`;
  append(body, h("div", { class: "card" }, h("h2", {}, `A/B tests of ${expert.name}`), tests.length
    ? table(["test", "variants", "status", "min votes", "started", "stopped"], tests.map((t) => [
      h("a", { href: link(t), class: pick && t.id === pick.id ? "selected" : null }, t.id), t.variants.map((v) => v.name).join(" / "),
      h("span", { class: `tag ${t.status}` }, t.status), fmt(t.min_votes), (t.created_at || "").slice(0, 16).replace("T", " "), (t.stopped_at || "—").slice(0, 16).replace("T", " ")]))
    : message("No A/B test of this expert yet.")), out);
  if (pick) append(body, await abReport(pick, out));
  append(body, abForm(expert, out, link));
}

async function abReport(test, out) {
  const r = await get(`ab/${encodeURIComponent(test.id)}`);
  const stop = test.status === "active" ? h("button", { class: "danger", id: "ab-stop", onclick: async () => {
    if (!confirm(`Stop the A/B test '${test.id}'? Its conversations go back to the expert's own config.`)) return;
    try { await post(`ab/${encodeURIComponent(test.id)}/stop`); dispatchEvent(new HashChangeEvent("hashchange")); } catch (err) { showError(err, out); }
  } }, "Stop the test") : null;
  return h("div", { class: "card", id: "ab-report" }, h("div", { class: "row" }, h("h3", {}, `Report: ${test.id}`), stop),
    h("p", { class: `verdict ${r.winner ? "ok" : "muted"}`, id: "ab-decision" }, r.decision),
    h("p", { class: "muted" }, `Rule: ${r.rule}.`, r.p_value !== null ? ` Largest p: ${r.p_value < 0.0001 ? "< 0.0001" : r.p_value.toFixed(4)}.` : ""),
    table(["variant", "turns", "votes", "up / down", "positive rate (95% interval)", "feedback rate", "citation use", "latency p50", "intents"],
      r.variants.map((v) => [h("b", {}, v.name, r.winner === v.name ? " ★" : ""), fmt(v.turns), fmt(v.votes), `${fmt(v.up)} / ${fmt(v.down)}`,
        interval(v), pct(v.feedback_rate), pct(v.citation_use), v.latency_p50_ms === null ? "—" : `${fmt(v.latency_p50_ms, 0)} ms`,
        Object.entries(v.intents || {}).map(([k, n]) => h("span", { class: "tag" }, `${k} ${n}`))])),
    h("details", {}, h("summary", {}, "variants' config overrides"),
      test.variants.map((v) => h("div", { class: "long" }, h("b", {}, `${v.name} (weight ${fmt(v.weight)}): `), h("code", {}, JSON.stringify(v.overrides))))));
}

/** The positive rate with its Wilson interval drawn on a 0-100% track. */
function interval(v) {
  if (!v.interval) return h("span", { class: "muted" }, "no votes");
  const [lo, hi] = v.interval;
  const seg = h("div", { class: "ci-seg" });
  seg.style.left = `${100 * lo}%`; seg.style.width = `${Math.max(0.5, 100 * (hi - lo))}%`;
  const dot = h("div", { class: "ci-dot" });
  dot.style.left = `${100 * v.positive_rate}%`;
  return h("div", { class: "ci", title: `${pct(v.positive_rate)}, 95% interval ${pct(lo)}-${pct(hi)}` },
    h("div", { class: "ci-track" }, seg, dot), h("small", {}, `${pct(v.positive_rate)} [${pct(lo)}, ${pct(hi)}]`));
}

function abForm(expert, out, link) {
  const rows = h("div", { class: "variants" });
  const addRow = (name, overrides) => append(rows, h("div", { class: "row variant" },
    h("input", { type: "text", class: "v-name", value: name, size: 12, "aria-label": "variant name", placeholder: "name" }),
    h("input", { type: "text", class: "v-over long", value: overrides, size: 48, "aria-label": "config overrides (JSON merge patch)", placeholder: "{} (the expert as it is)" }),
    h("input", { type: "number", class: "v-weight", value: 1, min: 0.01, step: "any", "aria-label": "assignment weight" })));
  addRow("control", "{}");
  addRow("variant", '{"retrieval": {"alpha": 0.1}}');
  const id = h("input", { type: "text", id: "ab-id", size: 14, placeholder: "(generated)" });
  const minVotes = h("input", { type: "number", min: 1, value: 30, id: "ab-min-votes" });
  return h("form", { class: "card", id: "ab-form", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const variants = [...rows.querySelectorAll(".variant")].map((r) => ({ name: r.querySelector(".v-name").value.trim(),
        overrides: parseOverrides(r.querySelector(".v-over").value), weight: Number(r.querySelector(".v-weight").value) || 1 }));
      const made = await post(`experts/${encodeURIComponent(expert.id)}/ab`, { variants, id: id.value.trim() || null, min_votes: Number(minVotes.value) || 30 });
      location.hash = link(made);
    } catch (err) { showError(err, out); }
  } }, h("h3", {}, "Start an A/B test"),
  h("p", { class: "muted" }, "Each variant is the expert's config with a JSON merge patch (e.g. other retrieval weights); each conversation is assigned one variant, by weight, for all its turns."),
  rows, h("div", { class: "row" }, h("button", { type: "button", onclick: () => addRow(`v${rows.children.length + 1}`, "{}") }, "Add a variant"),
    field("id", id), field("votes per variant before deciding", minVotes), h("button", { class: "primary" }, "Start")));
}

function parseOverrides(text) {
  if (!text.trim()) return {};
  try { return JSON.parse(text); } catch (err) { throw new Error(`overrides must be JSON, e.g. {"retrieval": {"alpha": 0.1}}: ${err.message}`); }
}

// -- cross-KG links -----------------------------------------------------------------------------------
async function linksView(body, dbId) {
  const { links } = await get("links", { kg: dbId });
  const out = h("div", { role: "status", id: "links-status" });
  const named = [];
  const refLink = (ref) => {
    const at = ref.indexOf(":");
    const a = nodeLink(ref.slice(0, at), ref.slice(at + 1));
    named.push([ref.slice(0, at), ref.slice(at + 1), a]);
    return h("span", {}, h("span", { class: "tag" }, ref.slice(0, at)), a);
  };
  const source = h("input", { type: "text", id: "link-source", size: 30, value: `${dbId}:`, required: true });
  const target = h("input", { type: "text", id: "link-target", size: 30, placeholder: "other_kg:node", required: true });
  const type = h("input", { type: "text", id: "link-type", size: 14, value: "relates_to", required: true, pattern: "[A-Za-z0-9_]+" });
  const weight = h("input", { type: "number", id: "link-weight", min: 0.01, step: "any", value: 1 });
  append(body, h("form", { class: "card", id: "link-form", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const made = await post("links", { source: source.value.trim(), target: target.value.trim(), type: type.value.trim(), weight: Number(weight.value) || 1 });
      clear(out, h("p", { class: "ok" }, `Linked ${made.source} —${made.type}→ ${made.target}.`));
      setTimeout(() => dispatchEvent(new HashChangeEvent("hashchange")), 400);
    } catch (err) { showError(err, out); }
  } }, h("h2", {}, "Cross-KG links"),
  h("p", { class: "muted" }, "Edges between nodes of two KGs (KG:node, a node id or an unambiguous name at each end), followed by multi-KG search, experts and the trace."),
  h("div", { class: "row" }, field("from", source), field("type", type), field("to", target), field("weight", weight), h("button", { class: "primary" }, "Add link")), out),
  h("div", { class: "card", id: "links" }, links.length
    ? table(["from", "type", "to", "weight", "added", ""], links.map((l) => [refLink(l.source), h("span", { class: "tag" }, l.type), refLink(l.target), fmt(l.weight, 2),
      (l.created_at || "").slice(0, 16).replace("T", " "), h("button", { class: "danger small", onclick: () => remove(l) }, "Remove")]))
    : message(`No cross-KG link touches ${dbId} yet.`)));
  nameLinks(named.slice(0, 100));
  append(body, traceForm(dbId));

  async function remove(l) {
    if (!confirm(`Remove the link ${l.source} —${l.type}→ ${l.target}?`)) return;
    try {
      await send("DELETE", `links?${new URLSearchParams({ source: l.source, target: l.target, type: l.type })}`);
      dispatchEvent(new HashChangeEvent("hashchange"));
    } catch (err) { showError(err, out); }
  }
}

/** Put each linked node's name in place of its id (the links API returns refs), as text. */
function nameLinks(items) {
  for (const [kg, id, a] of items) {
    get(`kg/${encodeURIComponent(kg)}/nodes/${encodeURIComponent(id)}`)
      .then((n) => { if (n.name) a.textContent = n.name; }).catch(() => a.classList.add("muted"));
  }
}

/** GET /api/trace: the shortest path between two nodes of any KGs, cross-KG edges included. */
function traceForm(dbId) {
  const from = h("input", { type: "text", id: "trace-source", size: 30, value: `${dbId}:`, required: true });
  const to = h("input", { type: "text", id: "trace-target", size: 30, placeholder: "other_kg:node", required: true });
  const out = h("div", { id: "trace-result", role: "status" });
  return h("form", { class: "card", id: "trace-form", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const t = await get("trace", { source: from.value.trim(), target: to.value.trim() });
      if (!t.found) { append(out, message(`No path within ${t.max_depth} hops.${t.notes?.length ? " " + t.notes.join(" ") : ""}`)); return; }
      append(out, h("div", { class: "flow" }, t.path.map((step, i) => [
        i ? h("span", { class: `link ${step.edge?.cross_kg ? "cross" : ""}` }, `${step.edge?.direction === "backward" ? "←" : ""}${step.edge?.type || ""}${step.edge?.direction === "backward" ? "" : "→"}`) : null,
        h("span", { class: "step" }, h("span", { class: "tag" }, step.kg), nodeLink(step.kg, { id: step.id, name: step.name || step.id }))])),
      h("p", { class: "muted" }, `${fmt(t.length)} hop(s) across ${t.kgs.join(", ")}.`, (t.notes || []).map((n) => ` ${n}`)));
    } catch (err) { showError(err, out); }
  } }, h("h3", {}, "Trace a path across KGs"), h("div", { class: "row" }, field("from", from), field("to", to), h("button", {}, "Trace")), out);
}
