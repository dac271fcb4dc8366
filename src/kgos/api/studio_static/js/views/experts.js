// Experts: list, create and edit (forms generated from the ExpertCreate JSON Schema of
// /openapi.json), duplicate, export/import, delete; chat over SSE with citations that open their
// node, a collapsible reasoning trace per answer, and the conversation history.
import { renderAnswer } from "../markdown.js";
import { download, get, post, raw, send, stream } from "../api.js";
import { append, bar, clear, field, fmt, h, message, nodeLink, table } from "../dom.js";
import { showError } from "../app.js";
import { schemaForm } from "../schemaform.js";

export async function render(root, route) {
  const [id, sub] = route.args;
  if (id === "new") return editor(root, null);
  if (id && sub === "edit") return editor(root, id);
  if (id) return chat(root, id, route.params.get("c"));
  const experts = await get("experts");
  const out = h("div");
  const file = h("input", { type: "file", accept: ".json,application/json", id: "expert-import", "aria-label": "exported expert file" });
  append(root, h("h1", {}, "Experts"), h("div", { class: "row" }, h("a", { href: "#/experts/new" }, h("button", { class: "primary" }, "New expert")),
    h("span", {}, "Import an exported expert: ", file, h("button", { onclick: () => importExpert(file, out) }, "Import"))), out,
  h("div", { class: "card" }, experts.length ? table(["Expert", "KGs", "Persona", "Conversations", ""], experts.map((x) => [
    h("a", { href: `#/experts/${encodeURIComponent(x.id)}` }, x.name), (x.kg_db_ids?.length ? x.kg_db_ids : [x.kg_db_id]).join(", "),
    `${x.persona?.name || ""} (${x.persona?.style || ""})`, fmt(x.conversation_count), actions(x, out)])) : message("No experts yet.")));
}

function actions(x, out) {
  const eid = encodeURIComponent(x.id);
  return h("span", { class: "row" }, h("a", { href: `#/experts/${eid}` }, "Chat"), h("a", { href: `#/experts/${eid}/edit` }, "Edit"),
    h("button", { onclick: async () => { try { await post(`experts/${eid}/duplicate`, { new_name: `${x.name} (copy)` }); rerender(); } catch (err) { showError(err, out); } } }, "Duplicate"),
    h("button", { onclick: () => download(`api/experts/${eid}/export`, `${x.id}.expert.json`).catch((err) => showError(err, out)) }, "Export"),
    h("button", { class: "danger", onclick: async () => {
      if (!confirm(`Delete the expert '${x.name}'?`)) return;
      try { await send("DELETE", `experts/${eid}`); rerender(); } catch (err) { showError(err, out); }
    } }, "Delete"));
}

function rerender() { dispatchEvent(new HashChangeEvent("hashchange")); }

async function importExpert(file, out) {
  clear(out);
  if (!file.files.length) { append(out, message("Choose an exported expert file first.", "bad")); return; }
  try {
    const document = JSON.parse(await file.files[0].text());
    const made = await post("experts/import", { document });
    location.hash = `#/experts/${encodeURIComponent(made.id)}`;
  } catch (err) { showError(err, out); }
}

async function editor(root, id) {
  const [spec, current] = await Promise.all([fetchOpenapi(), id ? get(`experts/${encodeURIComponent(id)}`) : null]);
  const schemas = spec.components.schemas;
  const out = h("div");
  const form = schemaForm(schemas.ExpertCreate, schemas, current || {}, id ? ["id", "schema_version"] : ["schema_version"]);
  append(root, h("h1", {}, id ? `Edit ${current.name}` : "New expert"), h("p", { class: "muted" }, "This form is generated from the expert config's JSON Schema (ExpertCreate in /openapi.json)."),
    h("form", { class: "card", id: "expert-form", onsubmit: async (e) => {
      e.preventDefault(); clear(out);
      try {
        const value = form.read();
        const made = id ? await send("PUT", `experts/${encodeURIComponent(id)}`, value) : await post("experts", value);
        location.hash = `#/experts/${encodeURIComponent(made.id || id)}`;
      } catch (err) { showError(err, out); }
    } }, form.el, h("button", { class: "primary" }, id ? "Save" : "Create"), out));
}

async function fetchOpenapi() {
  return (await raw("openapi.json")).json();
}

// -- chat -------------------------------------------------------------------------------------------
async function chat(root, id, conversationId) {
  const eid = encodeURIComponent(id);
  const [expert, convs] = await Promise.all([get(`experts/${eid}`), get(`experts/${eid}/conversations`, { limit: 20 })]);
  const log = h("div", { class: "chat card", id: "chat-log" });
  const input = h("textarea", { id: "chat-input", placeholder: "Ask the expert…", required: true });
  const state = { conversationId, busy: false };
  const history = h("div", { class: "card", id: "history" }, h("h3", {}, "Conversations"),
    convs.conversations.length ? convs.conversations.map((c) => h("div", {}, h("a", { href: `#/experts/${eid}?c=${encodeURIComponent(c.id)}` }, c.preview || c.id),
      h("span", { class: "muted" }, ` ${c.message_count} messages, ${c.last_message_at?.slice(0, 16) || ""}`))) : message("none yet"),
    h("a", { href: `#/experts/${eid}` }, "New conversation"));
  append(root, h("h1", {}, expert.name), h("p", { class: "muted long" }, expert.description || ""),
    h("div", { class: "grid2" }, h("div", {}, expert.persona?.greeting ? h("p", { class: "msg" }, expert.persona.greeting) : null, log,
      h("form", { class: "card", onsubmit: async (e) => { e.preventDefault(); if (!state.busy && input.value.trim()) await ask(expert, state, input, log); } },
        input, h("button", { class: "primary", id: "chat-send" }, "Ask"))), history));
  if (conversationId) {
    const conv = await get(`experts/${eid}/conversations/${encodeURIComponent(conversationId)}`);
    for (const m of conv.messages) {
      append(log, m.role === "user" ? h("div", { class: "msg user" }, `You: ${m.content}`) : answerText(m.content, undefined, m.metadata?.citations?.valid || null));
      if (m.role !== "user" && m.turn_id) append(log, feedbackBar(m.turn_id));
      if (m.role !== "user" && m.metadata) append(log, fillTrace(h("details", { class: "trace" }, h("summary", {}, "Reasoning trace")), { stored: m.metadata }));
    }
  }
}

/** An answer rendered from Markdown (js/markdown.js: sanitised, http(s) links only), every
 * "[Source: kg:node; kg:node2]" a link that opens the node; ``valid``: the citations the server checked. */
export function answerText(text, el = h("div", { class: "msg answer" }), valid = null) {
  el.classList.add("rendered");
  return renderAnswer(text, el, valid);
}

async function ask(expert, state, input, log) {
  const query = input.value.trim();
  input.value = "";
  state.busy = true;
  const answer = h("div", { class: "msg answer streaming" });
  const trace = { meta: null, sources: [], edges: [], plan: [], planWarnings: [], done: null, errors: [] };
  const traceEl = h("details", { class: "trace" }, h("summary", {}, "Reasoning trace"));
  append(log, h("div", { class: "msg user" }, `You: ${query}`), answer, traceEl);
  let text = "";
  try {
    await stream(`experts/${encodeURIComponent(expert.id)}/chat`, { query, conversation_id: state.conversationId || null }, (ev) => {
      if (ev.type === "conversation_start") state.conversationId = ev.conversation_id;
      else if (ev.type === "token") { text += ev.content; answer.textContent = text; answer.dataset.tokens = Number(answer.dataset.tokens || 0) + 1; log.scrollTop = log.scrollHeight; }
      else if (ev.type === "injection_meta") trace.meta = ev;
      else if (ev.type === "sources") Object.assign(trace, { sources: ev.nodes, edges: ev.edges || [], plan: ev.plan || [], planWarnings: ev.plan_warnings || [] });
      else if (ev.type === "error") trace.errors.push(ev.content);
      else if (ev.type === "done") trace.done = ev;
    });
    if (!trace.done) trace.errors.push("the stream ended before the answer was complete: the server stopped or restarted; ask again");
  } catch (err) { trace.errors.push(err.message); }
  clear(answer); answerText(text, answer, trace.done?.citations?.valid || null); answer.classList.remove("streaming");
  for (const e of trace.errors) append(log, h("div", { class: "bad", role: "alert" }, e));
  if (trace.done?.message_id && state.conversationId) trace.stored = await storedMeta(expert.id, state.conversationId, trace.done.message_id);
  fillTrace(traceEl, trace);
  if (trace.done?.turn_id) traceEl.before(feedbackBar(trace.done.turn_id));
  state.busy = false;
}

/** Thumbs up or down on one answer, with an optional comment (POST /api/feedback; voting again
 * replaces the vote; docs/learning.md). The vote feeds the KG's gap report. */
function feedbackBar(turnId) {
  const status = h("span", { class: "muted", role: "status" });
  const comment = h("input", { type: "text", maxlength: "2000", placeholder: "Why? (optional)", "aria-label": "feedback comment" });
  const vote = (rating) => async () => {
    try {
      const fb = await post("feedback", { turn_id: turnId, rating, comment: comment.value.trim() || null });
      status.textContent = fb.rating === "up" ? "Recorded: helpful" : "Recorded: not helpful";
    } catch (err) { status.textContent = err.message; }
  };
  return h("div", { class: "feedback", dataset: { turn: turnId } },
    h("span", { class: "muted" }, "Was this answer useful?"),
    h("button", { type: "button", class: "vote up", onclick: vote("up") }, "Helpful"),
    h("button", { type: "button", class: "vote down", onclick: vote("down") }, "Not helpful"),
    comment, status);
}

/** The metadata the server stored with an answer (intent, skills, tool calls...), or null. */
async function storedMeta(expertId, conversationId, messageId) {
  try {
    const conv = await get(`experts/${encodeURIComponent(expertId)}/conversations/${encodeURIComponent(conversationId)}`);
    return conv.messages.find((m) => m.id === messageId)?.metadata || null;
  } catch { return null; }
}


/** The reasoning trace of one answer: what the stream reported (t.meta, t.sources, t.edges, t.plan,
 * t.done) and what the server stored with the message (t.stored: spec/000 stage 8 metadata). */
function fillTrace(el, t) {
  const m = t.stored || {};
  const c = t.done?.citations || m.citations;
  const sources = t.sources?.length ? t.sources : (m.kg_nodes_used || []).map((id) => ({ id, name: id, score: m.retrieval_scores?.[id], source_kg: m.kg_db_id, components: m.retrieval_components?.[id] }));
  const edges = t.edges?.length ? t.edges : m.edges_followed || [];
  const plan = t.plan?.length ? t.plan : m.composition_plan || [];
  const tools = m.tool_calls || [];
  append(el,
    h("p", {}, `Intent: ${m.intent || "—"}${m.goal_mapping ? `; goal mapping: ${typeof m.goal_mapping === "string" ? m.goal_mapping : JSON.stringify(m.goal_mapping)}` : ""}; provider: ${m.provider || "—"}`),
    t.meta ? h("p", {}, `Injected: ${t.meta.kg_nodes} KG nodes, skills ${t.meta.skills ? "yes" : "no"}, memories ${t.meta.memories ? "yes" : "no"}`) : null,
    m.skills?.length ? h("p", { class: "long" }, `Playbook skills: ${m.skills.join(", ")}`) : null,
    h("h3", {}, `Retrieved nodes (${sources.length})`),
    h("p", { class: "muted" }, "Signals are the hybrid search's components (0..1, before weighting and the expert's boosts)."),
    table(["node", "KG", "score", "signals", "linked by"], sources.map((n) => [nodeLink(n.source_kg, n), n.source_kg, fmt(n.score),
      n.components ? h("div", { class: "signals" }, Object.keys(n.components).map((s) => bar(s, n.components[s] ?? 0, 1, s))) : "—",
      (n.edge_annotations || []).map((e) => h("div", { class: "long" }, `${e.source} —${e.type}→ ${e.target}`))])),
    h("h3", {}, `Edges followed (${edges.length})`),
    edges.length ? h("div", { class: "trace-edges" }, edges.map((e) => h("div", { class: "long" }, nodeLink(e.source_kg, { id: e.source, name: e.source_name || e.source }),
      ` —${e.type}→ `, nodeLink(e.source_kg, { id: e.target, name: e.target_name || e.target })))) : message("none"),
    h("h3", {}, `Composition plan (${plan.length} steps)`),
    plan.length ? h("ol", { class: "trace-plan" }, plan.map((s) => h("li", {}, nodeLink(s.node.source_kg, s.node), ` → ${s.action}`))) : message("no plan (the question did not ask to combine features)"),
    (t.planWarnings || []).map((w) => h("p", { class: "muted long" }, `Plan warning: ${w}`)),
    h("h3", {}, `Methods invoked as tools (${tools.length})`),
    tools.length ? tools.map((x) => h("div", { class: "long muted" }, JSON.stringify(x).slice(0, 400))) : message("none (the offline provider answers without tool calls)"),
    h("h3", {}, "Citation check"),
    c ? h("p", { class: c.ok ? "ok" : "bad" }, `${c.count} citations, ${c.valid.length} valid, ${c.unknown.length} unknown${c.unknown.length ? `: ${c.unknown.join(", ")}` : ""}`) : message("no citation check (the answer did not finish)"));
  return el;
}
