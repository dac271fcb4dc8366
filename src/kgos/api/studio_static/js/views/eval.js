// Evaluation: run an evaluation or the ablation as a job (POST /api/eval/jobs, polled for
// progress), chart R@1/5/10, MRR@10 and nDCG@10 per configuration and per level (Chart.js), list
// the failing probes (each opens its search); and the KG's stats as charts (types, degrees).
import { get, post } from "../api.js";
import { append, clear, field, fmt, h, message, script, select, table } from "../dom.js";
import { showError } from "../app.js";

const METRICS = ["recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"];
const COLOURS = ["#2f6fdb", "#12b76a", "#f79009", "#7a5af8", "#ee46bc"];
const charts = [];

export async function render(root, route) {
  await script("studio/vendor/chart-4.6.1.umd.min.js");  // Chart.js, for this view only
  charts.splice(0).forEach((c) => c.destroy());
  const kgs = await get("kg");
  const dbId = route.args[0] || kgs[0]?.db_id;
  if (!dbId) { append(root, message("No KGs yet.", "bad")); return; }
  const kgSel = select(kgs.map((k) => k.db_id), dbId);
  kgSel.addEventListener("change", () => { location.hash = `#/eval/${encodeURIComponent(kgSel.value)}`; });
  const source = select([["demo", "demo probes (shipped)"], ["inline", "upload a probe file (.jsonl)"]], "demo");
  const file = h("input", { type: "file", accept: ".jsonl,.json,text/plain", id: "probe-file", "aria-label": "probe file" });
  const ablation = h("input", { type: "checkbox", id: "ablation" });
  const limit = h("input", { type: "number", min: 1, placeholder: "all", id: "probe-limit" });
  const progress = h("progress", { class: "progress", max: 1, value: 0, hidden: true, id: "eval-progress" });
  const status = h("div", { id: "eval-status" });
  const out = h("div", { id: "eval-result" });
  const stats = h("div", { id: "kg-charts" });
  append(root, h("h1", {}, "Evaluation"),
    h("form", { class: "card", onsubmit: async (e) => {
      e.preventDefault(); clear(out); clear(status);
      try {
        const body = { db_id: kgSel.value, probes: source.value, ablation: ablation.checked };
        if (limit.value) body.limit = Number(limit.value);
        if (source.value === "inline") {
          if (!file.files.length) throw new Error("choose a probe file (JSON Lines: id, query, relevant, lenient, level)");
          body.probes_jsonl = await file.files[0].text();
        }
        progress.hidden = false;
        await follow(await post("eval/jobs", body), progress, status, out);
      } catch (err) { progress.hidden = true; showError(err, status); }
    } }, h("div", { class: "row" }, field("KG", kgSel), field("probes", source), file, field("ablation (10 configurations)", ablation), field("first N probes", limit),
      h("button", { class: "primary" }, "Run")), progress, status),
    out, h("h2", {}, `Stats of ${dbId}`), stats);
  await kgCharts(stats, dbId);
}

async function follow(job, progress, status, out) {
  for (;;) {
    const p = job.progress || {};
    progress.value = p.total ? p.done / p.total : 0;
    clear(status, h("span", { class: "muted" }, `job ${job.job_id}: ${job.status}${p.phase ? ` (${p.phase})` : ""}, ${fmt(p.done || 0)} of ${fmt(p.total || 0)} probe rankings`));
    if (job.status === "complete" || job.status === "failed") break;
    await new Promise((r) => setTimeout(r, 400));
    job = await get(`jobs/${job.job_id}`);
  }
  if (job.status === "failed") { append(status, h("div", { class: "card bad", role: "alert" }, `The evaluation failed: ${job.error}`)); return; }
  progress.value = 1;
  showReports(out, job.result);
}

function chart(parent, config) {
  const canvas = h("canvas");
  append(parent, h("div", { class: "chart" }, canvas));
  charts.push(new Chart(canvas, { ...config, options: { animation: false, responsive: true, ...config.options } }));
}

function showReports(out, job) {
  const reports = job.reports;
  append(out, h("h2", {}, `Results on ${job.db_id} (${reports[0].n} probes, strict)`));
  chart(out, { type: "bar", data: { labels: reports.map((r) => r.label),
    datasets: METRICS.map((m, i) => ({ label: m, data: reports.map((r) => r.strict[m]), backgroundColor: COLOURS[i] })) },
    options: { indexAxis: reports.length > 3 ? "y" : "x", scales: { x: { max: reports.length > 3 ? 1 : undefined }, y: { max: reports.length > 3 ? undefined : 1 } } } });
  append(out, table(["configuration", ...METRICS, "p50 ms"], reports.map((r) => [r.label, ...METRICS.map((m) => fmt(r.strict[m])), fmt(r.latency_ms.p50, 2)])));
  const last = reports[reports.length - 1];
  const levels = Object.keys(last.by_level);
  append(out, h("h3", {}, `Per level (${last.label})`));
  chart(out, { type: "bar", data: { labels: levels, datasets: METRICS.map((m, i) => ({ label: m, data: levels.map((l) => last.by_level[l].strict[m]), backgroundColor: COLOURS[i] })) },
    options: { scales: { y: { max: 1 } } } });
  append(out, h("h3", {}, `Failing probes (${last.failing_total}, strict R@10 = 0, ${last.label})`),
    last.failing.length ? table(["probe", "query", "level", "top 3"], last.failing.map((f) => [f.id,
      h("a", { href: `#/search?${new URLSearchParams({ q: f.query, kgs: job.db_id })}`, class: "long failing-probe" }, f.query), f.level, f.top.join(", ")])) : message("none"));
}

async function kgCharts(el, dbId) {
  try {
    const db = encodeURIComponent(dbId);
    const [kg, deg] = await Promise.all([get(`kg/${db}`), get(`kg/${db}/degrees`)]);
    const top = (obj) => Object.entries(obj).sort((a, b) => b[1] - a[1]).slice(0, 20);
    const nt = top(kg.stats.node_types), et = top(kg.stats.edge_types);
    chart(el, { type: "bar", data: { labels: nt.map((x) => x[0]), datasets: [{ label: "nodes by type", data: nt.map((x) => x[1]), backgroundColor: COLOURS[0] }] } });
    chart(el, { type: "bar", data: { labels: et.map((x) => x[0]), datasets: [{ label: "edges by type", data: et.map((x) => x[1]), backgroundColor: COLOURS[1] }] } });
    const labels = deg.bins.map((b, i) => (i + 1 < deg.bins.length && deg.bins[i + 1] - 1 > b ? `${b}-${deg.bins[i + 1] - 1}` : `${b}${i + 1 === deg.bins.length && b > 1 ? "+" : ""}`));
    chart(el, { type: "bar", data: { labels, datasets: [{ label: "nodes by total degree", data: deg.counts, backgroundColor: COLOURS[3] }] } });
  } catch (err) { showError(err, el); }
}
