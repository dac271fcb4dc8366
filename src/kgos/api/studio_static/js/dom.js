// DOM building without HTML parsing: every piece of text becomes a text node, so node names,
// descriptions, chat answers and citations from the API can never become markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) { if (typeof value === "function") el.addEventListener(key.slice(2), value); }
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "value" || key === "checked" || key === "disabled" || key === "hidden") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  return append(el, ...children);
}

/** ``el.append`` for what views build: nested arrays flattened, null/undefined/false skipped. */
export function append(el, ...children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el, ...children) {
  el.replaceChildren();
  return append(el, ...children);
}

export function fmt(x, digits = 3) {
  return typeof x === "number" ? (Number.isInteger(x) ? x.toLocaleString("en") : x.toFixed(digits)) : String(x ?? "");
}

/** A labelled bar for a value in [0, max]. */
export function bar(label, value, max = 1, kind = "") {
  const pct = Math.max(0, Math.min(100, (100 * (value || 0)) / (max || 1)));
  const fill = h("div", { class: "fill" });
  fill.style.width = `${pct}%`;
  return h("div", { class: `bar ${kind}`, title: `${label}: ${fmt(value)}` },
    h("span", {}, label), h("div", { class: "track" }, fill), h("span", {}, fmt(value)));
}

/** A link that opens a node in the explorer. */
export function nodeLink(dbId, node) {
  const id = typeof node === "string" ? node : node.id;
  const name = typeof node === "string" ? node : node.name || node.id;
  return h("a", { href: `#/explore/${encodeURIComponent(dbId)}?node=${encodeURIComponent(id)}`, class: "long", title: id }, name);
}

export function field(label, input) {
  return h("label", {}, label, input);
}

export function table(headers, rows) {
  return h("table", {}, h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))));
}

export function message(text, kind = "muted") {
  return h("p", { class: kind, role: kind === "bad" ? "alert" : null }, text);
}

export function select(options, value) {
  return h("select", {}, options.map((o) => {
    const [v, label] = Array.isArray(o) ? o : [o, o];
    return h("option", { value: v, selected: v === value ? true : null }, label);
  }));
}

const scripts = new Map();
/** Load a vendored classic script (a UMD library) once, when a view first needs it: index.html
 * then parses only what every page needs before the first view is drawn. */
export function script(src) {
  if (!scripts.has(src)) scripts.set(src, new Promise((done, fail) => {
    const el = document.createElement("script");
    el.src = src;
    el.async = false;  // scripts inserted together run in insertion order (a UMD plugin after its base)
    el.onload = done;
    el.onerror = () => { scripts.delete(src); fail(new Error(`could not load ${src}`)); };
    document.head.append(el);
  }));
  return scripts.get(src);
}
