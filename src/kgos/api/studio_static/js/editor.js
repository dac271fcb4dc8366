// Editing from the explorer: nodes (create, edit, delete), edges (add, delete), properties as JSON
// and the 56 dimensions as sliders, through the same JSON API as any client (so its Origin check,
// limits and validation apply), with undo of the last changes. Every node write names the version
// it was based on (if_updated_at): a node someone else changed meanwhile is a 409 NodeChanged,
// shown with a reload button, never silently overwritten.
import { send } from "./api.js";
import { append, clear, field, h, message } from "./dom.js";
import { showError } from "./app.js";

const undos = [];  // [{label, run}], the last change last
const UNDO_DEPTH = 20;
let undoButton = null;

const path = (dbId, id) => `kg/${encodeURIComponent(dbId)}/nodes/${encodeURIComponent(id).replace(/%2F/g, "/")}`;

/** The explorer's undo button; it names the change it would undo. */
export function undoBar(onUndone) {
  undoButton = h("button", { type: "button", id: "undo", disabled: true, onclick: async () => {
    const last = undos.pop();
    refreshUndo();
    if (!last) return;
    const status = () => document.getElementById("edit-status");  // the view is drawn again after an undo
    try { await last.run(); await onUndone(); clear(status(), message(`Undone: ${last.label}`, "ok")); }
    catch (err) { clear(status()); showError(err, status()); }
  } }, "Undo");
  refreshUndo();
  return h("div", { class: "row", id: "edit-bar" }, undoButton, h("div", { id: "edit-status", role: "status" }));
}

function pushUndo(label, run) {
  undos.push({ label, run });
  if (undos.length > UNDO_DEPTH) undos.shift();
  refreshUndo();
  const out = document.getElementById("edit-status");
  if (out) clear(out, message(`Saved: ${label}`, "ok"));
}

function refreshUndo() {
  if (!undoButton) return;
  const last = undos[undos.length - 1];
  undoButton.disabled = !last;
  undoButton.textContent = last ? `Undo: ${last.label}` : "Undo";
}

/** Properties typed by a person: a JSON object, or a message saying what is wrong. */
export function parseProperties(text) {
  let value;
  try { value = JSON.parse(text.trim() || "{}"); } catch (err) { return { error: `Properties are not valid JSON: ${err.message}` }; }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return { error: "Properties must be a JSON object ({\"key\": value, ...})" };
  return { value };
}

/** The edit form for ``node`` (its detail from the API) in ``where``; ``done(updated)`` after a save. */
export function nodeForm(dbId, node, catalogue, where, done) {
  const dimNames = new Set(catalogue.map((d) => d.name));
  const own = Object.fromEntries(Object.entries(node.properties || {}).filter(([k]) => !dimNames.has(k)));
  const name = h("input", { type: "text", id: "edit-name", value: node.name, required: true, maxlength: 1000, "aria-label": "name" });
  const type = h("input", { type: "text", id: "edit-type", value: node.type, required: true, maxlength: 200, "aria-label": "type" });
  const description = h("textarea", { id: "edit-description", "aria-label": "description" }, node.description || "");
  const props = h("textarea", { id: "edit-properties", rows: 6, spellcheck: "false", "aria-label": "properties (JSON)" }, JSON.stringify(own, null, 2));
  const out = h("div", { id: "edit-result", role: "status" });
  const sliders = catalogue.map((d) => dimSlider(d, node.properties?.[d.name]));
  const form = h("form", { class: "card", id: "node-editor", onsubmit: async (e) => {
    e.preventDefault();
    clear(out);
    const parsed = parseProperties(props.value);
    if (parsed.error) { append(out, h("p", { class: "bad", role: "alert", "data-error": "InvalidJSON" }, parsed.error)); return; }
    const properties = { ...parsed.value };
    for (const s of sliders) if (s.value() !== undefined) properties[s.name] = s.value();
    const before = { name: node.name, type: node.type, description: node.description || "", properties: node.properties || {} };
    try {
      const saved = await send("PATCH", path(dbId, node.id), { name: name.value.trim(), type: type.value.trim(), description: description.value,
        properties, replace_properties: true, if_updated_at: node.updated_at });
      // The undo is based on the saved version: if someone changed the node since, it is refused too.
      pushUndo(`edit of ${saved.name.slice(0, 40)}`, () => send("PATCH", path(dbId, node.id), { ...before, replace_properties: true, if_updated_at: saved.updated_at }));
      await done(saved);
    } catch (err) { conflictOrError(err, out, () => done(null)); }
  } }, h("h3", {}, "Edit node"), field("name", name), " ", field("type", type), h("label", { class: "block" }, "description", description),
    h("label", { class: "block" }, "properties (JSON object; dimensions are the sliders below)", props),
    h("details", { open: true }, h("summary", {}, "Dimensions (0 = the low end, 1 = the high end; untouched ones stay unset)"), h("div", { class: "dims" }, sliders.map((s) => s.el))),
    h("div", { class: "row" }, h("button", { class: "primary", id: "edit-save" }, "Save"), h("button", { type: "button", onclick: () => done(null) }, "Cancel")), out);
  clear(where, form);
  name.focus();
}

/** A labelled slider for one dimension, with its low and high descriptions; unset until moved. */
function dimSlider(d, current) {
  let touched = false;
  const has = typeof current === "number";
  const input = h("input", { type: "range", min: 0, max: 1, step: 0.05, value: has ? current : 0.5, "aria-label": d.name, id: `dim-${d.name}` });
  const shown = h("output", {}, has ? String(current) : "unset");
  input.addEventListener("input", () => { touched = true; shown.textContent = input.value; });
  const el = h("div", { class: "dim", title: d.description }, h("b", {}, d.name), shown,
    h("div", { class: "dimrow" }, h("small", {}, d.low_description), input, h("small", {}, d.high_description)));
  return { el, name: d.name, value: () => (touched ? Number(input.value) : has ? current : undefined) };
}

/** A 409 NodeChanged says so and offers a reload; any other error is shown as the server said it. */
function conflictOrError(err, out, reload) {
  showError(err, out);
  if (err.kind === "NodeChanged") append(out, h("button", { type: "button", id: "edit-reload", onclick: reload }, "Reload the node (your edits are dropped)"));
}

/** Delete ``node`` (with its edges ``nbrs``, for the undo) after a confirmation. */
export async function deleteNode(dbId, node, nbrs, out) {
  if (!window.confirm(`Delete "${node.name.slice(0, 80)}" and its ${nbrs.length} edges?`)) return false;
  try {
    await send("DELETE", `${path(dbId, node.id)}?${new URLSearchParams({ if_updated_at: node.updated_at })}`);
  } catch (err) { conflictOrError(err, out, () => {}); return false; }
  pushUndo(`delete of ${node.name.slice(0, 40)}`, async () => {
    await send("POST", path(dbId, node.id), { name: node.name, type: node.type, description: node.description || "", properties: node.properties || {} });
    for (const { edge } of nbrs)
      await send("POST", `kg/${encodeURIComponent(dbId)}/edges`, { source: edge.source, target: edge.target, type: edge.type, weight: edge.weight ?? 1, properties: edge.properties || {} });
  });
  return true;
}

/** A new node (POST .../nodes); resolves to it, or null when the server refused (message shown). */
export async function createNode(dbId, body, out) {
  try {
    const node = await send("POST", `kg/${encodeURIComponent(dbId)}/nodes`, body);
    pushUndo(`new node ${node.name.slice(0, 40)}`, () => send("DELETE", path(dbId, node.id)));
    return node;
  } catch (err) { showError(err, out); return null; }
}

/** A new edge; an edge that exists already is refused here (the API would strengthen it, and an undo
 * would then delete the edge that was there before). */
export async function createEdge(dbId, edge, existing, out) {
  if (existing) { append(out, h("p", { class: "bad", role: "alert", "data-error": "EdgeExists" }, `That ${edge.type} edge exists already.`)); return null; }
  try {
    const made = await send("POST", `kg/${encodeURIComponent(dbId)}/edges`, edge);
    pushUndo(`new edge ${edge.type}`, () => send("DELETE", `kg/${encodeURIComponent(dbId)}/edges?${new URLSearchParams({ source: made.source, target: made.target, type: made.type })}`));
    return made;
  } catch (err) { showError(err, out); return null; }
}

/** Delete one edge (source, target, type) as listed for a node; undo adds it back with its weight. */
export async function deleteEdge(dbId, edge, out) {
  try {
    await send("DELETE", `kg/${encodeURIComponent(dbId)}/edges?${new URLSearchParams({ source: edge.source, target: edge.target, type: edge.type })}`);
    pushUndo(`delete of edge ${edge.type}`, () => send("POST", `kg/${encodeURIComponent(dbId)}/edges`, { source: edge.source, target: edge.target, type: edge.type, weight: edge.weight ?? 1, properties: edge.properties || {} }));
    return true;
  } catch (err) { showError(err, out); return false; }
}
