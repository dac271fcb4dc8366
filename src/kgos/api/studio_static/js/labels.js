// Label placement for the explorer: Cytoscape draws every label it is given, overlapping or not,
// so the explorer picks which nodes are named. Nodes are taken by importance (the selection,
// then BFS depth, then degree); each gets the first of eight places around its dot (below, right,
// above, left, the corners; on rings those facing outward first) whose box meets no label already
// placed and no other dot, else none. Labels keep
// one screen size (LABEL_PX) at every zoom, so zooming in makes room and more nodes are named.

export const LABEL_PX = 12;
const FONT_FAMILY = "system-ui, sans-serif";
const GAP = 3;          // px between a dot and its label
const PAD = 2;          // px kept free around every label box
const BLEED = 3;        // px Cytoscape's label box (text background, outline) exceeds the text on each side
const CELL = 48;        // spatial grid cell (px) for the overlap checks
const MAX_LABELS = 150; // a 1,000 x 640 px graph holds about this many 12 px names; each costs a style bypass
const SHORT = 16;       // characters of a shortened name
// [text-valign, text-halign] of Cytoscape for each candidate place, in order of preference.
const NEAR = [["bottom", "center"], ["center", "right"], ["top", "center"], ["center", "left"],
  ["bottom", "right"], ["top", "right"], ["bottom", "left"], ["top", "left"]];
// The same places one line further out: tried only for the nodes in focus (centre, neighbours,
// selection), which must all be named.
const PLACES = NEAR.map(([v, hz]) => [v, hz, 0]);
const FAR = [14, 30].flatMap((extra) => NEAR.map(([v, hz]) => [v, hz, extra]));

const widths = new Map();
let ctx = null;

export function labelFont(px = LABEL_PX, bold = false) {
  return `${bold ? "bold " : ""}${px}px ${FONT_FAMILY}`;
}

/** Rendered width of ``text`` in the label font (cached: names repeat across redraws). */
function textWidth(text, bold) {
  const key = `${bold ? 1 : 0}${text}`;
  let w = widths.get(key);
  if (w === undefined) {
    ctx = ctx || document.createElement("canvas").getContext("2d");
    ctx.font = labelFont(LABEL_PX, bold);
    w = ctx.measureText(text).width;
    if (widths.size > 20000) widths.clear();
    widths.set(key, w);
  }
  return w;
}

/** The box of a label of size ``w`` x ``hgt`` put at ``place`` around a dot at (x, y) of radius r. */
function boxAt(place, x, y, r, w, hgt) {
  const b = rawBox(place, x, y, r + place[2], w, hgt);
  return { x1: b.x1 - BLEED, x2: b.x2 + BLEED, y1: b.y1 - BLEED, y2: b.y2 + BLEED };
}

function rawBox(place, x, y, r, w, hgt) {
  const [v, hz] = place;
  if (v !== "center" && hz !== "center") {  // a corner: Cytoscape puts the text outside both edges
    const x1 = hz === "right" ? x + r + GAP : x - r - GAP - w, y1 = v === "bottom" ? y + r + GAP : y - r - GAP - hgt;
    return { x1, x2: x1 + w, y1, y2: y1 + hgt };
  }
  if (v === "bottom") return { x1: x - w / 2, x2: x + w / 2, y1: y + r + GAP, y2: y + r + GAP + hgt };
  if (v === "top") return { x1: x - w / 2, x2: x + w / 2, y1: y - r - GAP - hgt, y2: y - r - GAP };
  if (hz === "right") return { x1: x + r + GAP, x2: x + r + GAP + w, y1: y - hgt / 2, y2: y + hgt / 2 };
  return { x1: x - r - GAP - w, x2: x - r - GAP, y1: y - hgt / 2, y2: y + hgt / 2 };
}

class Grid {
  // Numeric cell keys and plain loops: the checks run for every candidate place of up to 2,000
  // nodes per placement (string keys and a generator made them a third of the label pass).
  constructor() { this.cells = new Map(); }
  add(b) {
    for (let i = Math.floor(b.x1 / CELL); i <= Math.floor(b.x2 / CELL); i++)
      for (let j = Math.floor(b.y1 / CELL); j <= Math.floor(b.y2 / CELL); j++) {
        const k = i * 65536 + j;
        const cell = this.cells.get(k);
        if (cell) cell.push(b); else this.cells.set(k, [b]);
      }
  }
  hits(b, except = null) {
    for (let i = Math.floor(b.x1 / CELL); i <= Math.floor(b.x2 / CELL); i++)
      for (let j = Math.floor(b.y1 / CELL); j <= Math.floor(b.y2 / CELL); j++) {
        const cell = this.cells.get(i * 65536 + j);
        if (cell) for (const o of cell)
          if ((except === null || o.owner !== except) && o.x1 < b.x2 + PAD && b.x1 < o.x2 + PAD && o.y1 < b.y2 + PAD && b.y1 < o.y2 + PAD) return true;
      }
    return false;
  }
}

/**
 * Choose the labelled nodes of ``cy`` for the current viewport.
 * ``order`` is the nodes by importance; ``focus(node)`` says which must be named if at all possible;
 * with ``centre`` (rendered {x, y}: rings) a node's label goes first on the side facing away from
 * it, so names sit outside a ring, not over the edges inside it.
 * Returns [{node, place: [valign, halign, extra gap px], box, text}] in rendered pixels.
 */
export function placeLabels(cy, order, focus = () => false, centre = null) {
  const width = cy.width(), height = cy.height();
  const dots = new Grid();
  const items = [];
  for (const n of order) {  // positions and sizes read once: a relabel makes up to five passes
    if (!n.visible()) continue;
    const p = n.renderedPosition(), r = n.renderedWidth() / 2;
    if (p.x < -r || p.y < -r || p.x > width + r || p.y > height + r) continue;
    const must = focus(n);
    items.push({ node: n, id: n.id(), x: p.x, y: p.y, r, text: n.data("label"), bold: n.data("depth") === 0, must, places: places(p, r, must, centre) });
    dots.add({ x1: p.x - r, x2: p.x + r, y1: p.y - r, y2: p.y + r, owner: n.id() });
  }
  let placed = pass(items, dots, width, height);
  for (let round = 0; round < 4; round++) {  // the focus nodes left unnamed go first next round
    const named = new Set(placed.map((x) => x.item));
    const missed = items.filter((i) => i.must && !named.has(i));
    if (!missed.length) break;
    const first = new Set(missed);
    const next = pass([...missed, ...items.filter((i) => !first.has(i))], dots, width, height);
    if (mustCount(next) <= mustCount(placed)) break;  // no gain: another round would repeat this one
    placed = next;
  }
  return placed.map(({ item, place, box, text }) => ({ node: item.node, place, box, text }));
}

function mustCount(placed) {
  return placed.reduce((k, x) => k + (x.item.must ? 1 : 0), 0);
}

function pass(items, dots, width, height) {
  const labels = new Grid(), placed = [];
  const hgt = LABEL_PX * 1.25;
  for (const item of items) {
    if (placed.length >= MAX_LABELS) break;
    if (!item.text) continue;
    // A node in focus with no room for its name gets a shortened one rather than none.
    const texts = item.must && item.text.length > SHORT ? [item.text, `${item.text.slice(0, SHORT - 1)}…`] : [item.text];
    for (const t of texts) {
      const best = bestPlace(item, t, hgt, labels, dots, width, height);
      if (!best) continue;
      labels.add(best[1]);
      placed.push({ item, place: best[0], box: best[1], text: t });
      break;
    }
  }
  return placed;
}

/** The candidate places of a node, nearest first; with a centre, those facing away from it first. */
function places(p, r, must, centre) {
  const all = must ? [...PLACES, ...FAR] : PLACES;
  const dx = centre ? p.x - centre.x : 0, dy = centre ? p.y - centre.y : 0;
  if (!centre || Math.hypot(dx, dy) <= r) return all;
  const facing = ([v, hz]) => ((hz === "right" ? 1 : hz === "left" ? -1 : 0) * dx + (v === "bottom" ? 1 : v === "top" ? -1 : 0) * dy)
    / Math.hypot(hz === "center" ? 0 : 1, v === "center" ? 0 : 1);
  // Places facing the centre are left out: a name there sits over the edges inside the ring, far
  // from its dot when the dot's neighbours on the ring took the places outside.
  const d = Math.hypot(dx, dy), rank = new Map(all.map((pl) => [pl, facing(pl) / d]));
  return all.filter((pl) => rank.get(pl) > -0.3).sort((a, b) => a[2] - b[2] || rank.get(b) - rank.get(a));
}

function bestPlace(item, text, hgt, labels, dots, width, height) {
  const w = textWidth(text, item.bold);
  let best = null;
  for (const place of item.places) {  // first a place clear of labels and dots, then of labels only
    const b = boxAt(place, item.x, item.y, item.r, w, hgt);
    if (b.x1 < 0 || b.y1 < 0 || b.x2 > width || b.y2 > height || labels.hits(b)) continue;
    if (!dots.hits(b, item.id)) return [place, b];
    if (place[2] && best) break;  // a far place only when no near one is free
    best = best || [place, b];
  }
  return best;
}

/** Whether two rendered boxes overlap (the browser tests use the same rule on the drawn labels). */
export function overlaps(a, b) {
  return a.x1 < b.x2 && b.x1 < a.x2 && a.y1 < b.y2 && b.y1 < a.y2;
}
