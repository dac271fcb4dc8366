// Memory: the memory KG's stats and recent memories (GET /api/memory), entity search
// (GET /api/memory/entities) and the context block a query would inject (GET /api/memory/context).
import { get } from "../api.js";
import { append, clear, fmt, h, message, nodeLink, table } from "../dom.js";
import { showError } from "../app.js";

export async function render(root) {
  const m = await get("memory", { limit: 20 });
  append(root, h("h1", {}, "Memory"));
  if (!m.exists) {
    append(root, message(`No memory KG ('${m.db_id}') yet: it is created when an expert chat or 'kgos memory add' first remembers something.`));
    return;
  }
  const s = m.stats;
  const q = h("input", { type: "search", id: "memory-query", placeholder: "entity or question", size: 40 });
  const out = h("div", { id: "memory-result" });
  append(root, h("div", { class: "row cards" },
    h("div", { class: "card" }, h("h3", {}, "Memory KG"), table(["", ""], [["memories", fmt(s.memories)], ["entities", fmt(s.entities)], ["relations", fmt(s.edges)],
      ["oldest", s.oldest || "—"], ["newest", s.newest || "—"]]), h("a", { href: `#/explore/${encodeURIComponent(m.db_id)}` }, "Open the memory KG in the explorer")),
    h("div", { class: "card" }, h("h3", {}, "Entity types"), table(["type", "count"], Object.entries(s.entity_types).map(([t, n]) => [t, fmt(n)]))),
    h("div", { class: "card" }, h("h3", {}, "Top relations"), table(["predicate", "count"], Object.entries(s.top_predicates).map(([t, n]) => [t, fmt(n)])))),
  h("form", { class: "card row", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const [ents, ctx] = await Promise.all([get("memory/entities", { q: q.value.trim() }), get("memory/context", { q: q.value.trim() })]);
      append(out, h("div", { class: "card" }, h("h3", {}, `Entities (${ents.total})`), table(["entity", "type", "score"], ents.entities.map((x) => [nodeLink(m.db_id, x), x.type, fmt(x.score, 2)]))),
        h("div", { class: "card" }, h("h3", {}, "Context block"), ctx.text ? h("pre", { class: "long", id: "context-text" }, ctx.text) : message("empty: nothing in memory matches")));
    } catch (err) { showError(err, out); }
  } }, q, h("button", { class: "primary" }, "Look up")), out,
  h("div", { class: "card" }, h("h3", {}, "Recent memories"), m.recent.length ? table(["when", "memory", "tags", "KG"], m.recent.map((x) => [x.created_at?.slice(0, 16) || "", h("span", { class: "long" }, x.content), (x.tags || []).join(", "), x.kg_status]))
    : message("none")));
}
