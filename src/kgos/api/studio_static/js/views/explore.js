// Graph explorer: a neighbourhood from GET /api/kg/{db}/neighborhood drawn with Cytoscape.js;
// click a node for its panel (properties, 56 dimension bars, edges, provenance), double-click or
// "Expand" to add its neighbours; type colours + legend, type filters, search-to-focus, path
// highlighting (POST .../trace), impact by depth (POST .../impact) and layouts.
import { get, post } from "../api.js";
import { append, bar, clear, field, fmt, h, message, script, select, table } from "../dom.js";
import { showError } from "../app.js";
import { LABEL_PX, overlaps, placeLabels } from "../labels.js";
import { createEdge, createNode, deleteEdge, deleteNode, nodeForm, undoBar } from "../editor.js";
import { discover, pairMode, pending, provenance, showPrediction } from "../discover.js";

const PALETTE = ["#2f6fdb", "#12b76a", "#f79009", "#7a5af8", "#ee46bc", "#06aed4", "#f04438", "#667085", "#84cc16", "#a15c07", "#0e9384", "#c01574"];
const EDGE_PALETTE = ["#98a2b3", "#6ca0dc", "#e6a23c", "#74c69d", "#c38fd8", "#f08c8c", "#5fb8c9", "#b5a36a"];
const LAYOUTS = [["force", "force (fcose)"], ["rings", "rings by depth"], ["breadthfirst", "tree"], ["circle", "circle"], ["grid", "grid"]];
const MAX_LABEL = 40;
const OVERVIEW_AT = 5000;
const FORCE_MAX = 1500;  // nodes drawn with the force layout by default  // a KG with more nodes opens on its community overview unless a node is named
// The force layout's scripts (fcose needs cose-base, which needs layout-base), loaded when a force
// layout is first drawn: a big neighbourhood (rings) never parses their 320 KB.
const FCOSE = ["layout-base-2.0.1.js", "cose-base-2.2.0.js", "cytoscape-fcose-2.2.0.js"].map((f) => `studio/vendor/${f}`);
let state = null;

/** fcose registered with Cytoscape (the three scripts run in this order, each once). */
async function forceLib() {
  await Promise.all(FCOSE.map((src) => script(src)));
  if (window.cytoscapeFcose && !cytoscape.kgosFcose) { cytoscape.use(window.cytoscapeFcose); cytoscape.kgosFcose = true; }
}

export function colourOf(type) {
  if (!state.colours.has(type)) state.colours.set(type, PALETTE[state.colours.size % PALETTE.length]);
  return state.colours.get(type);
}

export async function render(root, route) {
  const kgs = await get("kg");
  if (!kgs.length) { append(root, message("No KGs in this workspace: import one on the Workspace page.", "bad")); return; }
  const dbId = route.args[0] || kgs[0].db_id;
  if (!kgs.some((k) => k.db_id === dbId)) {
    append(root, h("div", { class: "card bad", role: "alert" }, `No KG '${dbId}' in this workspace. Open one of: `,
      kgs.map((k) => [h("a", { href: `#/explore/${encodeURIComponent(k.db_id)}` }, k.db_id), " "])));
    return;
  }
  state = { dbId, colours: new Map(), edgeColours: new Map(), cy: null, labelTimer: 0, hiddenTypes: new Set(), hiddenEdges: new Set() };
  const p = route.params;
  const kgSel = select(kgs.map((k) => k.db_id), dbId);
  const node = h("input", { type: "search", id: "focus", placeholder: "node id or name (empty: best connected)", value: p.get("node") || "", size: 34, list: "focus-list" });
  const list = h("datalist", { id: "focus-list" });
  const depth = h("input", { type: "number", id: "depth", min: 0, max: 10, value: p.get("depth") || 2, style: null });
  const maxNodes = h("input", { type: "number", id: "max-nodes", min: 1, value: p.get("max_nodes") || 300 });
  const layout = select(LAYOUTS, p.get("layout") || "force");
  const go = () => { location.hash = `#/explore/${encodeURIComponent(kgSel.value)}?` + new URLSearchParams({ node: node.value.trim(), depth: depth.value, max_nodes: maxNodes.value, layout: layout.value }); };
  node.addEventListener("input", () => suggest(kgSel.value, node.value, list));
  node.addEventListener("change", () => {  // search-to-focus: a node already drawn is centred and opened
    const id = node.value.trim();
    if (state.cy && id && state.cy.getElementById(id).nonempty()) focusNode(id, panel);
  });
  layout.addEventListener("change", async () => { if (layout.value === "force") await forceLib(); runLayout(layout.value); });
  const info = h("div", { id: "graph-info" });
  const panel = h("div", { id: "node-panel", class: "card" }, message("Click a node to see its properties, dimensions and edges."));
  const tools = h("div", { id: "graph-tools" });
  append(root, h("h1", {}, "Graph explorer"),
    h("form", { class: "row card", onsubmit: (e) => { e.preventDefault(); go(); } }, field("KG", kgSel), node, list,
      field("depth", depth), field("max nodes", maxNodes), field("layout", layout), h("button", { class: "primary" }, "Show")),
    undoBar(() => { clear(root); return render(root, route); }), info, h("div", { class: "grid2" }, h("div", {}, h("div", { id: "graph" }), zoomBar(), h("div", { id: "legend", class: "legend card" }), tools), panel));
  const info0 = kgs.find((k) => k.db_id === dbId);
  // A KG that small always gets the force layout: its scripts load while the neighbourhood is fetched.
  const force = [undefined, "force"].includes(p.get("layout") ?? undefined) && info0.nodes <= FORCE_MAX ? forceLib() : null;
  // A large KG opened without a centre or a size opens on its overview (a link asks for it anywhere).
  const bare = !p.get("node") && !p.get("overview") && !p.get("max_nodes") && !p.get("depth");
  if (p.get("overview") === "communities" || (bare && info0.nodes > OVERVIEW_AT)) {
    await overview(dbId, info, panel, info0);
    return;
  }
  append(info, h("p", {}, h("a", { href: `#/explore/${encodeURIComponent(dbId)}?overview=communities`, id: "to-overview" }, "Community overview of the whole KG")));
  const params = { node: p.get("node") || undefined, depth: depth.value, max_nodes: maxNodes.value };
  let data;
  const t0 = performance.now();
  try { data = await get(`kg/${encodeURIComponent(dbId)}/neighborhood`, params); }
  catch (err) { showError(err, info); if (err.body?.suggestions?.length) append(info, suggestions(dbId, err.body.suggestions)); return; }
  if (data.message) append(info, h("div", { class: "card", id: "graph-message", role: "status" }, data.message));
  append(info, h("p", { class: "muted" }, `${fmt(data.nodes.length)} nodes, ${fmt(data.edges.length)} edges around `, h("b", { class: "long" }, data.center),
    ` (${fmt(data.reachable)} reachable within ${data.depth} hops).`));
  const t1 = performance.now();
  // Force layout up to FORCE_MAX nodes; past it (unless asked) rings by depth, which cost no layout
  // time (fCoSE took 1.6 s for 2,000 nodes under load; the overview is the readable view of a big KG).
  const chosen = p.get("layout") || (data.nodes.length > FORCE_MAX ? "rings" : "force");
  layout.value = chosen;
  if (chosen === "force") await (force || forceLib());
  draw(data, panel, chosen);
  const t2 = performance.now();
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));  // painted
  state.timing = { fetch_ms: t1 - t0, draw_ms: performance.now() - t1, create_ms: state.createMs ?? 0, layout_ms: state.layoutMs ?? 0, label_ms: state.labelMs ?? 0,
    paint_ms: performance.now() - t2, since_navigation_ms: performance.now(), first_elements: state.cy.elements().length };
  if (state.rest.length) await addRest();
  state.timing.complete_ms = performance.now();
  append(tools, exploreTool(panel), pathTool(), impactTool(), newNodeTool(panel));
  publish();
  await showNode(data.center, panel);
  state.cy.getElementById(data.center).select();
}

// Elements per add after the first paint. Smaller chunks answer the mouse sooner but each costs a
// frame: on the synthetic 5,000 nodes (12,500 elements) one batch blocked 0.6-1.5 s, chunks of 400
// blocked 56-215 ms but took 10-14 s to have everything in (7-8 s in one batch), load 9-10.
const CHUNK = 1000;

/** The elements off the default view, added after it is on screen in chunks that yield to the
 * event loop (one batch of 4,600 elements held the page for 0.6-1.3 s on go), the edges leaving
 * the view first; the longest chunk is published as ``timing.max_block_ms``. */
async function addRest() {
  const cy = state.cy, rest = state.rest;
  state.rest = [];
  let longest = 0;
  for (let i = 0; i < rest.length && state.cy === cy; i += CHUNK) {
    const t = performance.now();
    cy.batch(() => cy.add(rest.slice(i, i + CHUNK)));
    longest = Math.max(longest, performance.now() - t);
    await new Promise((done) => setTimeout(done, 0));
  }
  if (state.cy !== cy) return;
  legend();
  if (state.hiddenTypes.size || state.hiddenEdges.size) applyFilters();  // a filter set while the chunks came in
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  state.timing.max_block_ms = longest;
}

/** A KG too large to draw node by node: one disc per community (Leiden), sized by its members and
 * named after its best-connected one, linked by the edges between communities; a click drills into
 * the community's hub (its neighbourhood, 300 nodes). */
async function overview(dbId, info, panel, kgInfo) {
  const t0 = performance.now();
  let map;
  try { map = await get(`kg/${encodeURIComponent(dbId)}/communities/map`, { k: 40 }); } catch (err) { showError(err, info); return; }
  const shown = map.communities.reduce((n, c) => n + c.size, 0);
  append(info, h("p", { class: "muted", id: "overview-note" }, `Community overview: the ${fmt(map.communities.length)} largest of ${fmt(map.count)} communities, `
    + `${fmt(shown)} of ${fmt(kgInfo.nodes)} nodes. Click a community to open it.`));
  const name = (c) => `${c.top[0]?.name || "community " + c.id} +${fmt(c.size - 1)}`;
  const data = {
    nodes: map.communities.map((c) => ({ id: `community:${c.id}`, name: name(c), type: Object.keys(c.node_types)[0] || "community", depth: 1, degree: c.size, hub: c.top[0]?.id })),
    edges: map.links.map((l) => ({ source: `community:${l.source}`, target: `community:${l.target}`, type: "links between communities", count: l.edges })),
  };
  const t1 = performance.now();
  state.overview = true;
  await forceLib();
  draw(data, panel, "force");
  state.cy.off("tap", "node").off("dbltap", "node");
  const hubs = new Map(data.nodes.map((n) => [n.id, n.hub]));
  state.cy.on("tap", "node", (e) => {
    const hub = hubs.get(e.target.id());
    if (hub) location.hash = `#/explore/${encodeURIComponent(dbId)}?` + new URLSearchParams({ node: hub, depth: 2, max_nodes: 300 });
  });
  clear(panel, h("h2", {}, "Communities"), table(["community", "members", "node types"], map.communities.map((c) => [
    h("a", { href: `#/explore/${encodeURIComponent(dbId)}?` + new URLSearchParams({ node: c.top[0]?.id || "", depth: 2, max_nodes: 300 }), class: "long" }, name(c)),
    fmt(c.size), Object.entries(c.node_types).slice(0, 3).map(([t, n]) => `${t} ${fmt(n)}`).join(", ")])));
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  state.timing = { fetch_ms: t1 - t0, draw_ms: performance.now() - t1, layout_ms: state.layoutMs ?? 0, label_ms: state.labelMs ?? 0, since_navigation_ms: performance.now() };
  publish();
}

/** What the browser tests and the benchmark read: the ids drawn and the edge count. */
function publish() {
  const cy = state.cy;
  const box = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };
  // Each drawn label with Cytoscape's own rendered box (px, relative to the graph's top-left) and font size.
  const labels = cy.nodes(".lbl").map((n) => {
    const b = n.renderedBoundingBox(box);
    return { id: n.id(), text: n.pstyle("label").strValue, depth: n.data("depth"), x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2, font_px: n.pstyle("font-size").pfValue * cy.zoom() };  // as drawn (computed style)
  });
  const unnamed = cy.nodes(":visible").filter((n) => inFocus(n) && !n.hasClass("lbl")).map((n) => {
    const p = n.renderedPosition();
    return { id: n.id(), x: p.x, y: p.y };
  });
  const ext = cy.extent();
  const onScreen = cy.nodes(":visible").filter((n) => { const q = n.position(); return q.x >= ext.x1 && q.x <= ext.x2 && q.y >= ext.y1 && q.y <= ext.y2; }).length;
  const c = cy.nodes("[depth = 0]").first();
  const center = c.nonempty() ? { id: c.id(), ...c.renderedPosition() } : null;
  // Rendered positions (for tests that click nodes and predicted edges), up to 1,000 nodes.
  const points = cy.nodes().length <= 1000 ? Object.fromEntries(cy.nodes().map((n) => { const q = n.renderedPosition(); return [n.id(), [q.x, q.y]]; })) : {};
  const predicted = cy.edges(".pred").map((e) => { const m = e.renderedMidpoint(); return { id: e.id(), source: e.data("source"), target: e.data("target"), type: e.data("type"), x: m.x, y: m.y }; });
  window.kgosExplorer = { focus_unnamed: unnamed, center, on_screen: onScreen, points, predicted, hover: state.hovered || null, ids: cy.nodes().map((n) => n.id()), nodes: cy.nodes().length, edges: cy.edges().length, timing: state.timing,
    labels, overview: Boolean(state.overview), zoom: cy.zoom(), layout: state.layout, width: cy.width(), height: cy.height() };
}

function suggestions(dbId, ids) {
  return h("p", {}, "Did you mean: ", ids.map((id) => [h("a", { href: `#/explore/${encodeURIComponent(dbId)}?node=${encodeURIComponent(id)}` }, id), " "]));
}

let suggestTimer = 0;
function suggest(dbId, text, list) {
  clearTimeout(suggestTimer);
  if (text.trim().length < 2) return;
  suggestTimer = setTimeout(async () => {
    try {
      const r = await post(`kg/${encodeURIComponent(dbId)}/search`, { query: text.trim(), k: 8, mode: "text" });
      clear(list, r.results.map((x) => h("option", { value: x.node.id }, x.node.name)));
    } catch { /* suggestions are optional */ }
  }, 250);
}

function label(name) {
  return name.length > MAX_LABEL ? `${name.slice(0, MAX_LABEL - 1)}…` : name;
}

function elements(data) {
  const nodes = data.nodes.map((n) => ({ group: "nodes", data: nodeData(n) }));
  const edges = data.edges.map((e) => ({ group: "edges", data: edgeData(e.source, e.type, e.target) }));
  return [...nodes, ...edges];
}

function nodeData(n) {
  // Dot area grows with the log of the whole-KG degree, so hubs stand out without hiding the rest.
  const size = n.depth === 0 ? 24 : 8 + 3 * Math.log2(1 + (n.degree || 0));
  return { id: n.id, name: n.name, label: label(n.name), type: n.type, depth: n.depth, degree: n.degree || 0, size, colour: colourOf(n.type) };
}

function edgeData(source, type, target) {
  return { id: `e:${source}|${type}|${target}`, source, target, type, colour: edgeColourOf(type) };
}

export function edgeColourOf(type) {
  if (!state.edgeColours.has(type)) state.edgeColours.set(type, EDGE_PALETTE[state.edgeColours.size % EDGE_PALETTE.length]);
  return state.edgeColours.get(type);
}

function styles(big) {
  return [
    { selector: "node", style: { "background-color": "data(colour)", label: "", width: "data(size)", height: "data(size)", "font-family": "system-ui, sans-serif", color: "#101828",
      "text-outline-color": "#fff", "text-outline-width": 0, "text-background-color": "#fff", "text-background-opacity": 0.8, "text-background-padding": 1 } },
    { selector: "node.lbl", style: { label: "data(label)" } },
    { selector: "node[depth = 0]", style: { "font-weight": "bold", "border-width": 3, "border-color": "#101828" } },
    { selector: "edge", style: big ? { width: 1, "line-color": "data(colour)", "curve-style": "haystack", opacity: 0.6 } :
      { width: 1.2, "line-color": "data(colour)", "target-arrow-color": "data(colour)", "target-arrow-shape": "triangle", "arrow-scale": 0.7, "curve-style": "bezier", opacity: 0.45 } },
    { selector: "edge.lbl", style: { label: "data(type)", "font-size": "data(fs)", color: "#475467", "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8, opacity: 1, width: 2 } },
    { selector: "edge[count]", style: { width: "mapData(count, 1, 60, 1, 9)", "target-arrow-shape": "none", "curve-style": "straight" } },
    { selector: "node:selected", style: { "border-width": 3, "border-color": "#101828" } },
    { selector: "node.hl", style: { "border-width": 3, "border-color": "#f04438", "z-index": 10 } },
    { selector: "edge.hl", style: { "line-color": "#f04438", "target-arrow-color": "#f04438", width: 3, opacity: 1, "z-index": 10 } },
    { selector: "edge.pred", style: { "line-style": "dashed", "line-dash-pattern": [6, 4], "line-color": "#12b76a", "target-arrow-color": "#12b76a", width: 2.5, opacity: 1, "curve-style": "bezier" } },
    { selector: "node.picked", style: { "border-width": 4, "border-color": "#12b76a" } },
    { selector: ".faded, .dim", style: { opacity: 0.12 } },
    { selector: ".hidden", style: { display: "none" } },
  ];
}

function draw(data, panel, layoutName) {
  // Past ~3,000 elements: straight edges without arrows and a cached texture while panning
  // (interactive at 20,000 elements); labels are placed by importance at every size.
  const big = data.nodes.length + data.edges.length > 3000;
  const tc = performance.now();
  const els = elements(data);
  const rings = ringPositions(els.filter((e) => e.group === "nodes").map((e) => e.data));
  for (const e of els) if (e.group === "nodes") e.position = rings[e.data.id];
  const container = document.getElementById("graph");
  // Rings: the default view (the focus filling the graph) is computed from the positions, so
  // Cytoscape never takes the bounding box of every element before the first paint (a fit over
  // 5,600 elements cost 0.4-0.8 s of a 2,000-node first render: the style of each, edges included).
  const view = layoutName === "rings" ? focusViewport(els, container.clientWidth, container.clientHeight) : null;
  // A big graph is drawn in two steps: what the default view shows first (about a quarter of a
  // 2,000-node neighbourhood), the rest once that is on screen (render() waits for both).
  const [first, rest] = big && view ? splitByView(els, view, container.clientWidth, container.clientHeight) : [els, []];
  state.rest = rest;
  state.cy = cytoscape({
    container, elements: first, layout: { name: "preset", fit: !view, padding: 20 }, ...(view || {}),
    textureOnViewport: big, hideEdgesOnViewport: big, pixelRatio: big ? 1 : "auto", style: styles(big),
  });
  state.createMs = performance.now() - tc;
  state.layout = layoutName;
  if (layoutName !== "rings") runLayout(layoutName, false);
  const cy = state.cy;
  if (!view) fitFocus();
  cy.on("tap", "node", (e) => {
    if (state.pick) { e.target.addClass("picked"); if (state.pick(e.target.id())) { state.pick = null; cy.nodes(".picked").removeClass("picked"); } return; }
    showNode(e.target.id(), panel);
  });
  cy.on("tap", "edge.pred", (e) => showPrediction(explore(panel), e.target, panel));
  cy.on("dbltap", "node", (e) => expand(e.target.id()));
  cy.on("mouseover", "node", (e) => hover(e.target));
  cy.on("mouseout", "node", () => hover(null));
  cy.on("viewport resize", () => { clearTimeout(state.labelTimer); state.labelTimer = setTimeout(relabel, 90); });
  cy.on("select unselect", "node", () => relabel());
  legend();
  relabel();
}

/** Zoom buttons (keyboard users, touchpads): 1.5x about the middle of the graph; "Fit" shows it all. */
function zoomBar() {
  const by = (f) => () => { const cy = state.cy; if (cy) cy.zoom({ level: cy.zoom() * f, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } }); };
  return h("div", { class: "row", id: "zoom-bar" }, h("button", { type: "button", onclick: by(1.5), "aria-label": "zoom in" }, "+"),
    h("button", { type: "button", onclick: by(1 / 1.5), "aria-label": "zoom out" }, "−"),
    h("button", { type: "button", onclick: () => state.cy?.fit(undefined, 30) }, "Fit all"),
    h("button", { type: "button", onclick: () => fitFocus() }, "Fit focus"),
    h("span", { class: "muted" }, "Scroll or use the buttons to zoom: more nodes are named as there is room."));
}

/** The default view: the centre and its direct neighbours fill the graph (the rest is around them). */
function fitFocus() {
  const focus = state.cy.nodes().filter((n) => (n.data("depth") ?? 99) <= 1);
  if (focus.length > 1 && focus.length < state.cy.nodes().length) state.cy.fit(focus, 40);
}

/** ``fitFocus`` done on the elements' preset positions: {zoom, pan} that fit the centre and its
 * neighbours (dots only, 40 px padding) in a ``width`` x ``height`` graph; null when fitFocus would not move. */
function focusViewport(els, width, height) {
  const nodes = els.filter((e) => e.group === "nodes");
  const focus = nodes.filter((e) => (e.data.depth ?? 99) <= 1);
  if (focus.length < 2 || focus.length === nodes.length || !width || !height) return null;
  let x1 = Infinity, y1 = Infinity, x2 = -Infinity, y2 = -Infinity;
  for (const { data, position: p } of focus) {
    const r = data.size / 2 + (data.depth === 0 ? 3 : 0);  // the centre's border
    x1 = Math.min(x1, p.x - r); y1 = Math.min(y1, p.y - r); x2 = Math.max(x2, p.x + r); y2 = Math.max(y2, p.y + r);
  }
  const zoom = Math.min((width - 80) / (x2 - x1), (height - 80) / (y2 - y1));
  return { zoom, pan: { x: (width - zoom * (x1 + x2)) / 2, y: (height - zoom * (y1 + y2)) / 2 } };
}

/** ``els`` split into what a viewport shows first (the nodes on it and the edges between them) and
 * the rest (nodes off it, then every other edge). The edges leaving the view come with the rest:
 * taking their far ends into the first paint made it 2,500-3,600 elements instead of ~1,000 on go
 * (paint 2.7 s against 0.4 s, same load). */
function splitByView(els, { zoom, pan }, width, height) {
  const margin = 40 / zoom;
  const box = { x1: -pan.x / zoom - margin, y1: -pan.y / zoom - margin, x2: (width - pan.x) / zoom + margin, y2: (height - pan.y) / zoom + margin };
  const keep = new Set(), first = [], nodes = new Map(), leaving = [], others = [];
  for (const e of els) if (e.group === "nodes") {
    const { x, y } = e.position;
    const on = x >= box.x1 && x <= box.x2 && y >= box.y1 && y <= box.y2;
    if (on) { keep.add(e.data.id); first.push(e); } else nodes.set(e.data.id, e);
  }
  for (const e of els) if (e.group === "edges") {
    const a = keep.has(e.data.source), b = keep.has(e.data.target);
    (a && b ? first : a || b ? leaving : others).push(e);
  }
  // The rest in the order it shows: the edges leaving the view (after their far ends), then the others.
  const ends = new Set(leaving.map((e) => (keep.has(e.data.source) ? e.data.target : e.data.source)));
  const far = [...ends].map((id) => nodes.get(id));
  return [first, [...far, ...leaving, ...[...nodes.values()].filter((n) => !ends.has(n.data.id)), ...others]];
}

/** The nodes that must be named: the centre, its neighbours, the selection and a highlighted path. */
function inFocus(n) {
  return (n.data("depth") ?? 99) <= 1 || n.selected() || n.hasClass("hl");
}

/** Nodes by importance for naming: the selection, then BFS depth, then whole-KG degree. */
function importance() {
  // Keys read once per node (a comparator calling Cytoscape made the sort 90 ms on 2,000 nodes).
  const keyed = state.cy.nodes().map((n) => [n.selected() || n.hasClass("hl") ? -1 : n.data("depth") ?? 99, n.data("degree"), n.id(), n]);
  keyed.sort((a, b) => a[0] - b[0] || b[1] - a[1] || (a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0));
  return keyed.map((k) => k[3]);
}

/** Name the nodes that fit (labels.js) at one screen size, and publish them for the tests. */
function relabel() {
  const cy = state.cy;
  if (!cy) return;
  const t0 = performance.now();
  const zoom = cy.zoom();
  const c = state.layout === "rings" ? cy.nodes("[depth = 0]") : null;
  const placed = placeLabels(cy, importance(), inFocus, c?.nonempty() ? c.renderedPosition() : null);
  const fs = LABEL_PX / zoom;
  const keep = new Set(placed.map((x) => x.node.id()));
  cy.batch(() => { cy.nodes(".lbl").filter((n) => !keep.has(n.id())).removeClass("lbl").removeStyle("label"); cy.edges(".lbl").data("fs", fs); });
  // Per-node style bypasses: with data-mapped sizes Cytoscape kept drawing a label's old texture
  // (old font size) on a node labelled before and after a zoom.
  cy.batch(() => {
    for (const { node, place, text } of placed) {
      const [lv, lh, extra] = place;
      const gap = (3 + extra) / zoom;
      node.style({ label: text, "font-size": fs, "text-background-padding": 1 / zoom, "text-valign": lv, "text-halign": lh, "text-margin-x": lh === "right" ? gap : lh === "left" ? -gap : 0,
        "text-margin-y": lv === "bottom" ? gap : lv === "top" ? -gap : 0 });
      node.addClass("lbl");
    }
  });
  dropOverlaps(placed.map((x) => x.node));
  state.labelMs = performance.now() - t0;
  publish();
}

const BOX = { includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false, includeUnderlays: false };

/** Check the drawn boxes (Cytoscape's own, which can differ from the estimate by a pixel or two
 * sideways): a label meeting one placed before it is taken off, so none overlap as drawn. */
function dropOverlaps(nodes) {
  const kept = [];
  for (const n of nodes) {
    const b = n.renderedBoundingBox(BOX);
    if (kept.some((o) => overlaps(o, b))) n.removeClass("lbl").removeStyle("label");
    else kept.push(b);
  }
}

/** Hover: the node, its neighbours and the edges between them stay; the rest fades; edge types show. */
function hover(node) {
  const cy = state.cy;
  cy.batch(() => {
    cy.elements().removeClass("dim");
    cy.edges(".lbl").removeClass("lbl");
    cy.nodes(".hov").removeClass("hov").removeStyle("label");
    state.hovered = node ? { id: node.id(), neighbours: node.neighborhood().nodes().map((n) => n.id()) } : null;
    if (!node) return;
    const near = node.closedNeighborhood();
    cy.elements().not(near).addClass("dim");
    near.edges().data("fs", LABEL_PX * 0.85 / cy.zoom()).addClass("lbl");
    // The neighbours left unnamed by the placement are named while the pointer is on their node.
    const zoom = cy.zoom();
    near.nodes().not(".lbl").addClass("hov").forEach((n) => n.style({ label: n.data("label"), "font-size": LABEL_PX / zoom, "text-background-padding": 1 / zoom, "text-valign": "bottom", "text-halign": "center", "text-margin-x": 0, "text-margin-y": 3 / zoom }));
  });
  window.kgosExplorer.hover = state.hovered;
}

const DISC_AT = 120;  // neighbours past which the first ring becomes a disc

/** Concentric rings by BFS depth (the API's ``depth``), each ring sorted by type. The centre's
 * neighbours, when more than DISC_AT, fill a disc instead (a sunflower: golden-angle steps, the
 * best-connected first, so the names placed by importance spread over it): on a ring 420 of them
 * stood 4 px apart and a name could only sit outside the ring or over the edges inside it, far
 * from its dot. */
function ringPositions(nodes) {
  const byDepth = new Map();
  for (const n of nodes) { const d = n.depth ?? 0; if (!byDepth.has(d)) byDepth.set(d, []); byDepth.get(d).push(n); }
  const positions = {};
  for (const [d, ring] of byDepth) {
    const r = d === 0 ? 0 : 60 + d * Math.max(80, ring.length * 3.2);
    if (d === 1 && ring.length > DISC_AT) { disc(ring, r, positions); continue; }
    ring.sort((a, b) => a.type.localeCompare(b.type));
    ring.forEach((n, i) => { const a = (2 * Math.PI * i) / ring.length; positions[n.id] = { x: r * Math.cos(a), y: r * Math.sin(a) }; });
  }
  return positions;
}

function disc(nodes, r, positions) {
  nodes.sort((a, b) => (b.degree || 0) - (a.degree || 0) || (a.id < b.id ? -1 : 1));
  const inner = 0.25 * r;  // room around the centre for its name
  nodes.forEach((n, i) => {
    const rad = Math.sqrt(inner * inner + ((i + 0.5) / nodes.length) * (r * r - inner * inner)), a = i * 2.399963;
    positions[n.id] = { x: rad * Math.cos(a), y: rad * Math.sin(a) };
  });
}

/** fcose's options: spectral start + force refinement; "draft" (spectral only) past 1,500 nodes. */
function forceOptions(n) {
  return { name: "fcose", quality: n > 1500 ? "draft" : "default", randomize: true, animate: false, fit: true, padding: 30,
    nodeRepulsion: () => 30000, idealEdgeLength: (e) => (e.source().data("depth") === 0 || e.target().data("depth") === 0 ? 220 : 110), nodeSeparation: 120, gravity: 0.2, numIter: 2500, packComponents: true };
}

/** Run ``fn`` with Math.random seeded (mulberry32): the same KG gets the same picture on every load. */
function seeded(fn, seed = 20261127) {
  const random = Math.random;
  let a = seed;
  Math.random = () => { a = (a + 0x6d2b79f5) | 0; let t = Math.imul(a ^ (a >>> 15), 1 | a); t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
  try { return fn(); } finally { Math.random = random; }
}

export function runLayout(name, label = true) {
  const cy = state.cy;
  if (!cy) return;
  state.layout = name;
  if (name === "rings") {
    const positions = ringPositions(cy.nodes().map((n) => n.data()));
    cy.layout({ name: "preset", positions: (n) => positions[n.id()], fit: true, padding: 20 }).run();
  } else if (name === "force" && cytoscape.kgosFcose) {
    const t = performance.now();
    seeded(() => cy.layout(forceOptions(cy.nodes().length)).run());
    state.layoutMs = performance.now() - t;
  } else {
    const roots = cy.nodes().filter((n) => n.data("depth") === 0);
    cy.layout({ name: name === "force" ? "cose" : name, animate: false, fit: true, padding: 20, roots, numIter: 400 }).run();
  }
  if (label) relabel();
}

function legend() {
  const el = document.getElementById("legend");
  const nodeTypes = [...new Set(state.cy.nodes().map((n) => n.data("type")))].sort();
  const edgeTypes = [...new Set(state.cy.edges().not(".pred").map((e) => e.data("type")))].sort();
  const toggle = (set, type, what) => h("input", { type: "checkbox", checked: !set.has(type), onchange: (e) => {
    e.target.checked ? set.delete(type) : set.add(type); applyFilters(); }, "aria-label": `show ${what} ${type}` });
  clear(el, h("div", {}, h("b", {}, "Node types "), nodeTypes.map((t) => {
    const dot = h("i"); dot.style.background = colourOf(t);
    return h("span", {}, toggle(state.hiddenTypes, t, "nodes of type"), dot, t);
  })), h("div", {}, h("b", {}, "Edge types "), edgeTypes.map((t) => {
    const line = h("i", { class: "line" }); line.style.background = edgeColourOf(t);
    return h("span", {}, toggle(state.hiddenEdges, t, "edges of type"), line, t);
  })));
}

function applyFilters() {
  state.cy.batch(() => {
    state.cy.nodes().forEach((n) => n.toggleClass("hidden", state.hiddenTypes.has(n.data("type"))));
    state.cy.edges().forEach((e) => e.toggleClass("hidden", state.hiddenEdges.has(e.data("type"))));
  });
  relabel();
}

async function expand(id) {
  const data = await get(`kg/${encodeURIComponent(state.dbId)}/neighborhood`, { node: id, depth: 1, max_nodes: 200 }).catch((err) => { showError(err, document.getElementById("graph-info")); return null; });
  if (!data) return;
  const have = new Set(state.cy.elements().map((e) => e.id()));
  const base = state.cy.getElementById(id).data("depth") ?? 0;
  const add = elements(data).filter((e) => !have.has(e.data.id));
  add.forEach((e) => { if (e.group === "nodes") { e.data.depth = base + e.data.depth; e.data.size = 8 + 3 * Math.log2(1 + e.data.degree); } });
  const centre = state.cy.getElementById(id).position();
  add.forEach((e, i) => { if (e.group === "nodes") e.position = { x: centre.x + 60 * Math.cos(i), y: centre.y + 60 * Math.sin(i) }; });
  state.cy.add(add);
  legend(); applyFilters();
  relabel();
}

async function showNode(id, panel) {
  const db = encodeURIComponent(state.dbId);
  const nid = encodeURIComponent(id).replace(/%2F/g, "/");
  clear(panel, message("Loading…"));
  try {
    const [node, nbrs, dims, catalogue] = await Promise.all([get(`kg/${db}/nodes/${nid}`), get(`kg/${db}/nodes/${nid}/neighbors`, { limit: 100 }),
      get(`kg/${db}/nodes/${nid}/dims`), catalogueOnce()]);
    const values = new Map(dims.values.map((v) => [v.name, v]));
    clear(panel, h("h2", { class: "long", id: "panel-name" }, node.name), h("p", {}, h("span", { class: "tag" }, node.type), " ", h("code", { class: "long" }, node.id)),
      h("p", { class: "long" }, node.description || ""),
      h("div", { class: "row" }, h("button", { onclick: () => expand(id) }, "Expand"), h("button", { onclick: () => { document.getElementById("path-a").value = id; } }, "Path from"),
        h("button", { onclick: () => { document.getElementById("path-b").value = id; } }, "Path to"), h("button", { onclick: () => impact(id) }, "Impact")),
      h("div", { class: "row" }, h("button", { id: "discover-node", onclick: () => discover(explore(panel), id, document.getElementById("explore-status")) }, "Predict missing edges"),
        h("button", { id: "pending-node", onclick: () => pending(explore(panel), id, document.getElementById("explore-status")) }, "Pending proposals")),
      h("div", { class: "row" }, h("button", { id: "edit-node", onclick: () => nodeForm(state.dbId, node, catalogue, panel, (saved) => edited(id, saved, panel)) }, "Edit"),
        h("button", { class: "danger", id: "delete-node", onclick: async () => { if (await deleteNode(state.dbId, node, nbrs.neighbors, panel)) removed(id, panel); } }, "Delete")),
      h("h3", {}, "Properties"), table(["key", "value"], Object.entries(node.properties || {}).filter(([k]) => !values.has(k)).map(([k, v]) => [k, h("span", { class: "long" }, shorten(typeof v === "string" ? v : JSON.stringify(v)))])),
      h("h3", {}, "Provenance"), table(["", ""], [["created", node.created_at || "—"], ["updated", node.updated_at || "—"], ["source", String(node.properties?.source ?? "—")]]),
      h("h3", {}, `Edges (${nbrs.neighbors.length})`), table(["dir", "type", "node", "from", ""], nbrs.neighbors.map((n) => [n.direction === "outgoing" ? "→" : "←", n.edge.type,
        h("a", { href: "#", class: "long", onclick: (e) => { e.preventDefault(); focusNode(n.node.id, panel); } }, n.node.name),
        h("small", { class: "muted provenance" }, provenance(n.edge)),
        h("button", { class: "danger small", "aria-label": `delete edge ${n.edge.type} ${n.node.id}`, onclick: async () => {
          if (await deleteEdge(state.dbId, n.edge, panel)) { state.cy.getElementById(`e:${n.edge.source}|${n.edge.type}|${n.edge.target}`).remove(); relabel(); showNode(id, panel); } } }, "×")])),
      edgeForm(node, nbrs.neighbors, panel),
      h("h3", {}, `Dimensions (${values.size} of ${catalogue.length} set)`),
      h("details", { open: values.size > 0 }, h("summary", {}, "all 56"), catalogue.map((d) => bar(d.name, values.get(d.name)?.value ?? 0, 1))));
  } catch (err) { clear(panel); showError(err, panel); }
}

const SHOWN_CHARS = 2000;  // a 1 MB property value is shown as its start and its length
function shorten(text) {
  return text.length > SHOWN_CHARS ? `${text.slice(0, SHOWN_CHARS)}… (${text.length.toLocaleString("en")} characters)` : text;
}

/** After a save: the drawn node takes the new name and type, the panel shows the saved node. */
function edited(id, saved, panel) {
  const n = state.cy.getElementById(id);
  if (saved && n.nonempty()) { n.data({ name: saved.name, label: label(saved.name), type: saved.type, colour: colourOf(saved.type) }); legend(); relabel(); }
  return showNode(id, panel);
}

function removed(id, panel) {
  state.cy.getElementById(id).remove();
  legend(); relabel();
  clear(panel, message("Deleted. Undo brings it back with its edges."));
}

/** "New edge from this node": type and target (id or name, suggested as typed). */
function edgeForm(node, existing, panel) {
  const type = h("input", { type: "text", id: "new-edge-type", placeholder: "edge type", required: true, size: 14, "aria-label": "new edge type" });
  const target = h("input", { type: "search", id: "new-edge-target", placeholder: "target node id", required: true, size: 22, list: "focus-list", "aria-label": "new edge target" });
  const out = h("div", { id: "edge-result" });
  return h("form", { class: "row", id: "edge-form", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    const edge = { source: node.id, target: target.value.trim(), type: type.value.trim() };
    const there = existing.some((n) => n.edge.source === edge.source && n.edge.target === edge.target && n.edge.type === edge.type);
    const made = await createEdge(state.dbId, edge, there, out);
    if (!made) return;
    if (state.cy.getElementById(made.target).nonempty()) state.cy.add({ group: "edges", data: edgeData(made.source, made.type, made.target) });
    legend(); relabel(); showNode(node.id, panel);
  } }, h("b", {}, "New edge →"), type, target, h("button", {}, "Add"), out);
}

/** "New node" under the graph: name, type, description; it is drawn and opened. */
function newNodeTool(panel) {
  const name = h("input", { type: "text", id: "new-node-name", placeholder: "name", required: true, "aria-label": "new node name" });
  const type = h("input", { type: "text", id: "new-node-type", placeholder: "type", required: true, size: 12, "aria-label": "new node type" });
  const out = h("div", { id: "new-node-result" });
  return h("form", { class: "card", id: "new-node", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    const node = await createNode(state.dbId, { name: name.value.trim(), type: type.value.trim() }, out);
    if (!node) return;
    const centre = state.cy.extent();
    state.cy.add({ group: "nodes", data: nodeData({ ...node, depth: 1, degree: 0 }), position: { x: (centre.x1 + centre.x2) / 2, y: centre.y1 + 40 / state.cy.zoom() } });
    legend(); relabel(); focusNode(node.id, panel);
    name.value = "";
  } }, h("h3", {}, "New node"), name, " ", type, " ", h("button", {}, "Create"), out);
}

/** What discover.js needs of the explorer. */
function explore(panel) {
  return { dbId: state.dbId, cy: () => state.cy, nodeData, edgeData, refresh: () => { legend(); relabel(); },
    showNode: (id) => showNode(id, panel), showPrediction: (edge) => showPrediction(explore(panel), edge, panel), onPick: (fn) => { state.pick = fn; } };
}

/** spec/003's explore tools: the validate-a-pair mode and where discovery messages go. */
function exploreTool(panel) {
  const out = h("div", { id: "explore-status", role: "status" });
  return h("div", { class: "card", id: "explore-tool" }, h("h3", {}, "Discover"),
    h("p", { class: "muted" }, "Predicted edges are drawn ", h("span", { class: "pred-swatch" }, "dashed green"), ": click one to accept, reject or ask the LLM."),
    h("button", { type: "button", id: "validate-pair", onclick: () => pairMode(explore(panel), out) }, "Validate a pair"), out);
}

let catalogue = null;
async function catalogueOnce() {
  catalogue = catalogue || (await get("kgos/dimensions")).dimensions;
  return catalogue;
}

function focusNode(id, panel) {
  const n = state.cy.getElementById(id);
  if (n.nonempty()) { state.cy.elements().unselect(); n.select(); state.cy.animate({ center: { eles: n }, zoom: 1.5 }, { duration: 200 }); }
  showNode(id, panel);
}

function highlight(ids) {
  state.cy.elements().removeClass("hl faded");
  if (!ids) return;
  state.cy.elements().addClass("faded");
  state.cy.elements().filter((e) => ids.has(e.id())).removeClass("faded").addClass("hl");
  relabel();
}

function pathTool() {
  const a = h("input", { type: "text", id: "path-a", placeholder: "from node" });
  const b = h("input", { type: "text", id: "path-b", placeholder: "to node" });
  const out = h("div", { id: "path-result" });
  return h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault(); clear(out);
    try {
      const r = await post(`kg/${encodeURIComponent(state.dbId)}/trace`, { source: a.value.trim(), target: b.value.trim() });
      if (!r.found) { append(out, message(`No path within ${r.max_depth} hops. ${r.notes.join(" ")}`)); highlight(null); return; }
      const ids = new Set();
      const steps = r.path.filter((x) => x.node);
      const missing = steps.filter((s) => state.cy.getElementById(s.node).empty());
      state.cy.add(missing.map((s) => ({ group: "nodes", data: nodeData({ id: s.node, name: s.name, type: s.type, depth: 99 }) })));
      for (let i = 1; i < r.path.length; i += 2) {
        const prev = r.path[i - 1].node, next = r.path[i + 1].node, edge = r.path[i];
        const [src, dst] = edge.direction === "forward" ? [prev, next] : [next, prev];
        const eid = `e:${src}|${edge.edge}|${dst}`;
        if (state.cy.getElementById(eid).empty()) state.cy.add({ group: "edges", data: edgeData(src, edge.edge, dst) });
        ids.add(eid);
      }
      steps.forEach((s) => ids.add(s.node));
      highlight(ids);
      append(out, h("p", { class: "long" }, `${r.length} hops: `, steps.map((s, i) => [i ? " → " : "", s.name])));
    } catch (err) { showError(err, out); }
  } }, h("h3", {}, "Path (trace_path)"), a, " ", b, " ", h("button", {}, "Highlight"), " ", h("button", { type: "button", onclick: () => highlight(null) }, "Clear"), out);
}

function impactTool() {
  return h("div", { class: "card", id: "impact-result" }, h("h3", {}, "Impact"), message("Select a node and press Impact: what depends on it, by depth."));
}

async function impact(id) {
  const out = document.getElementById("impact-result");
  clear(out, h("h3", {}, "Impact"));
  try {
    const r = await post(`kg/${encodeURIComponent(state.dbId)}/impact`, { node: id });
    const ids = new Set([id]);
    append(out, h("p", {}, `${fmt(r.total_impacted)} nodes impacted by `, h("b", { class: "long" }, r.node.name)),
      Object.entries(r.risk_by_depth).map(([d, items]) => {
        items.forEach((x) => ids.add(x.node.id));
        return h("details", { open: d === "1" }, h("summary", {}, `depth ${d}: ${fmt(r.counts_by_depth[d])} nodes`),
          items.map((x) => bar(x.node.name.slice(0, 60), x.risk, 1)));
      }));
    highlight(ids);
  } catch (err) { showError(err, out); }
}
