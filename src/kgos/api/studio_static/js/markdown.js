// Expert answers as Markdown, rendered safely (issue 29): the vendored marked parses (GFM), raw HTML
// in the text is shown as text, not parsed; DOMPurify then keeps only an allow-list of tags and
// attributes; links keep their href only when it is http(s) (javascript:, data:, relative... lose
// it) and open in a new tab without a referrer; no images. Citations ("[Source: kg:node]") are taken
// out before parsing and put back as links into the explorer, only for the ones the server's citation
// check found valid when that check is known, so a fake marker in node text never becomes a link.
import { Marked } from "../vendor/marked-18.2.1.esm.js";
import DOMPurify from "../vendor/dompurify-3.5.0.es.js";
import { append, h } from "./dom.js";

const TAGS = ["p", "br", "strong", "em", "del", "code", "pre", "blockquote", "ul", "ol", "li", "a", "h1", "h2", "h3",
  "h4", "h5", "h6", "hr", "table", "thead", "tbody", "tr", "th", "td"];
const ATTRS = ["href", "title", "align", "start"];
const SAFE_URL = /^https?:\/\/[^\s]+$/i;
const CITATION = /\[Source: ([^\]\n]{1,2000})\]/g;
const SLOT = /\uE000(\d+)\uE001/g; // private-use characters: no Markdown meaning, never in a node id we make
const HAS_SLOT = /\uE000\d+\uE001/;

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const parser = new Marked({ gfm: true, breaks: true, renderer: { html: (token) => escapeHtml(token.text || token.raw || "") } });
const purify = DOMPurify();  // an instance of our own: its hooks do not leak into other users
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName !== "A") return;
  const href = node.getAttribute("href") || "";
  if (SAFE_URL.test(href)) { node.setAttribute("rel", "noopener noreferrer nofollow"); node.setAttribute("target", "_blank"); }
  else node.removeAttribute("href");
});

/** ``text`` (Markdown with citations) rendered into ``el``; ``valid``: the cited refs the server checked. */
export function renderAnswer(text, el, valid = null) {
  const refs = [];
  const marked = String(text || "").replace(SLOT, "").replace(CITATION, (_, inner) => `\uE000${refs.push(inner) - 1}\uE001`);
  const html = parser.parse(marked, { async: false });
  const fragment = purify.sanitize(html, { ALLOWED_TAGS: TAGS, ALLOWED_ATTR: ATTRS, ALLOW_DATA_ATTR: false, RETURN_DOM_FRAGMENT: true });
  placeCitations(fragment, refs, valid ? new Set(valid) : null);
  el.append(fragment);
  return el;
}

function placeCitations(root, refs, valid) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts = [];
  while (walker.nextNode()) if (HAS_SLOT.test(walker.currentNode.data)) texts.push(walker.currentNode);
  for (const node of texts) {
    const parts = [];
    let last = 0;
    for (const m of node.data.matchAll(SLOT)) {
      parts.push(node.data.slice(last, m.index), citation(refs[Number(m[1])] ?? "", valid));
      last = m.index + m[0].length;
    }
    parts.push(node.data.slice(last));
    node.replaceWith(...parts);
  }
}

function citation(inner, valid) {
  const el = h("span", { class: "cite" }, "[Source: ");
  inner.split(/;\s*/).forEach((ref, i) => {
    const r = ref.trim();
    const parts = r.match(/^([a-z0-9_-]{1,64}):(.+)$/);
    const ok = parts && (!valid || valid.has(r));
    append(el, i ? "; " : "", ok ? h("a", { class: "citation", href: `#/explore/${encodeURIComponent(parts[1])}?node=${encodeURIComponent(parts[2])}`, title: r }, parts[2])
      : h("span", { class: "citation unknown", title: "not a node this answer was given" }, r));
  });
  append(el, "]");
  return el;
}
