"""Link prediction: each predictor on small graphs with known answers, the filtered ranking protocol
against a brute-force reference, and ``link_predictor(kg)`` on real (tiny) KGs with its bad inputs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import kgos
import kgos.linkpred as lp
from kgos.linkpred import link_predictor
from kgos.errors import InvalidArgument, NotTrained
from kgos.linkpred.protocol import KnownEdges, filtered_ranks, metrics
from kgos.linkpred.triples import LinkGraph, Triples, read_split


def triples(rows: list[tuple[str, str, str]], entities: list[str] | None = None) -> Triples:
    ents = tuple(sorted(entities or {x for r in rows for x in (r[0], r[2])}))
    rels = tuple(sorted({r[1] for r in rows}))
    a = np.array([(ents.index(h), rels.index(r), ents.index(t)) for h, r, t in rows], np.int64).reshape(-1, 3)
    return Triples(a[:, 0], a[:, 1], a[:, 2], ents, rels)


# -- the protocol ------------------------------------------------------------------------------------
def reference_ranks(table: np.ndarray, test: Triples, known: set[tuple[int, int, int]]) -> list[float]:
    """Filtered realistic ranks by plain loops: table[h, r, t] is the score of (h, r, t)."""
    out = []
    for side in ("tail", "head"):
        for h, r, t in zip(test.head.tolist(), test.relation.tolist(), test.tail.tolist()):
            true = table[h, r, t]
            higher = ties = 0
            for e in range(table.shape[0]):
                cand = (h, r, e) if side == "tail" else (e, r, t)
                if cand == (h, r, t) or cand in known:
                    continue
                s = table[cand]
                higher += s > true
                ties += s == true
            out.append(1 + higher + 0.5 * ties)
    return out


def test_filtered_ranks_match_a_brute_force_reference() -> None:
    rng = np.random.default_rng(7)
    n, nr = 25, 3
    table = rng.integers(0, 6, (n, nr, n)).astype(float)  # few values: many ties
    all_rows = rng.integers(0, [n, nr, n], (300, 3))
    all_rows = np.unique(all_rows, axis=0)
    ents, rels = tuple(f"e{i}" for i in range(n)), tuple(f"r{i}" for i in range(nr))
    part = [Triples(a[:, 0], a[:, 1], a[:, 2], ents, rels) for a in np.array_split(all_rows[rng.permutation(len(all_rows))], 3)]
    train, valid, test = part
    known = KnownEdges(train, valid, test)
    got = filtered_ranks(lambda h, r: table[h, r, :], lambda t, r: table[:, r, t].T, test, known, batch=7)
    known_set = {tuple(x) for x in all_rows.tolist()}
    assert got.tolist() == reference_ranks(table, test, known_set)
    m = metrics(got, "table")
    ref = np.array(reference_ranks(table, test, known_set))
    assert math.isclose(m.mrr, float(np.mean(1 / ref))) and math.isclose(m.hits_at_10, float(np.mean(ref <= 10)))
    assert set(m.to_dict()) >= {"mrr", "hits@1", "hits@3", "hits@10", "n", "predictor"}


def test_read_split(tmp_path: Path) -> None:
    for name, rows in (("train", ["a\tr\tb", "b\tr\tc"]), ("valid", ["a\tr\tc"]), ("test", ["c\ts\ta"])):
        (tmp_path / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    s = read_split(tmp_path)
    assert s.train.entities == ("a", "b", "c") and s.train.relations == ("r", "s")
    assert (s.test.head[0], s.test.relation[0], s.test.tail[0]) == (2, 1, 0)
    (tmp_path / "test.tsv").write_text("only two\tcolumns\n")
    with pytest.raises(InvalidArgument, match="head<TAB>relation<TAB>tail"):
        read_split(tmp_path)
    with pytest.raises(InvalidArgument, match="not a split folder"):
        read_split(tmp_path / "nowhere")


# -- predictors with known answers ------------------------------------------------------------------------
def test_neighbourhood_scores() -> None:
    # a and d share b (degree 3) and c (degree 2); e shares b with a.
    t = triples([("a", "r", "b"), ("a", "r", "c"), ("d", "r", "b"), ("d", "r", "c"), ("e", "r", "b")])
    g = LinkGraph(t)
    a, d, e = (t.entities.index(x) for x in "ade")
    row = {name: lp.predictor(name).fit(g).score_tails(np.array([a]), np.array([0]))[0]
           for name in ("common_neighbors", "adamic_adar", "resource_allocation")}
    assert row["common_neighbors"][d] == 2 and row["common_neighbors"][e] == 1
    assert math.isclose(row["adamic_adar"][d], 1 / math.log(3) + 1 / math.log(2), rel_tol=1e-6)
    assert math.isclose(row["resource_allocation"][d], 1 / 3 + 1 / 2, rel_tol=1e-6)
    ev = lp.predictor("adamic_adar").fit(g).evidence(a, 0, d)
    assert ev == {"shared_neighbors": ["b", "c"], "shared_count": 2}


def family() -> list[tuple[str, str, str]]:
    rows = []
    for f in range(6):  # six families of three generations
        g, p, c1, c2 = f"g{f}", f"p{f}", f"c{f}a", f"c{f}b"
        rows += [(g, "parent", p), (p, "parent", c1), (p, "parent", c2), (g, "grandparent", c1)]
        if f:
            rows.append((g, "grandparent", c2))
    return rows


def test_metapath_learns_a_composition_rule_and_explains_it() -> None:
    t = triples(family())
    m = lp.predictor("metapath", max_length=2).fit(LinkGraph(t))
    gp = t.relations.index("grandparent")
    assert m.rules[gp][0][0] == (t.relations.index("parent"),) * 2  # parent . parent => grandparent
    g0, c0b = t.entities.index("g0"), t.entities.index("c0b")
    scores = m.score_tails(np.array([g0]), np.array([gp]))[0]
    assert scores[c0b] > 0 and set(np.flatnonzero(scores == scores.max())) == {t.entities.index(x) for x in ("c0a", "c0b")}
    heads = m.score_heads(np.array([c0b]), np.array([gp]))[0]
    assert np.argmax(heads) == g0
    ev = m.evidence(g0, gp, c0b)
    assert ev["rules"][0]["path"] == ["parent", "parent"] and ev["rules"][0]["example"] == ["g0", "p0", "c0b"]


def test_complex_learns_held_out_edges_of_a_clustered_relation() -> None:
    rows = [(f"x{i}", "near", f"x{j}") for i in range(8) for j in range(8) if i != j]
    rows += [(f"y{i}", "near", f"y{j}") for i in range(8) for j in range(8) if i != j]
    held = [("x0", "near", "x1"), ("y2", "near", "y3")]
    t_all = triples(rows)
    train = triples([r for r in rows if r not in held], list(t_all.entities))
    test = triples(held, list(t_all.entities))
    test = Triples(test.head, np.zeros(2, np.int64), test.tail, t_all.entities, t_all.relations)
    m = lp.predictor("complex", dim=16, epochs=40, seed=1).fit(LinkGraph(train))
    ranks = filtered_ranks(m.score_tails, m.score_heads, test, KnownEdges(train, test))
    assert ranks.max() <= 2.0  # the 7 other candidates of the other cluster rank below
    assert m.losses[-1] < m.losses[0]


def test_text_cosine_ranks_the_nearest_vector_first() -> None:
    t = triples([("a", "r", "b"), ("c", "r", "d")])
    v = np.array([[1, 0, 0], [0.9, 0.1, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    m = lp.predictor("text").fit(LinkGraph(t, vectors=v))
    s = m.score_tails(np.array([0]), np.array([0]))[0]
    assert np.argmax(s) == 1 and s[0] == s.min()  # the nearest other node; a node predicts no edge to itself
    with pytest.raises(NotTrained, match="embed"):
        lp.predictor("text").fit(LinkGraph(t))


def test_seed_scorer_learns_which_type_edges_point_to() -> None:
    rows = [(f"tool{i}", "uses", f"param{(i * 3 + j) % 10}") for i in range(10) for j in range(3)]
    t = triples(rows)
    types = np.array([0 if e.startswith("param") else 1 for e in t.entities])
    g = LinkGraph(t, types, ("param", "tool"))
    m = lp.predictor("seed", epochs=30).fit(g)
    tool0 = t.entities.index("tool0")
    s = m.score_tails(np.array([tool0]), np.array([0]))[0]
    assert np.all(np.abs(s) <= 1.0 + 1e-6)  # 0.7 cos + 0.3 tanh stays in [-1, 1]
    mlp = (s - 0.7 * (m.U @ m.U[tool0])) / 0.3  # the trained half: tanh(MLP([x_h; x_t]))
    assert mlp[types == 0].mean() > mlp[types == 1].mean() + 0.5


def test_ensemble_weighs_members_by_validation_mrr() -> None:
    t = triples(family())
    m = lp.predictor("ensemble", members=["metapath", "common_neighbors"], params={"metapath": {"max_length": 2}},
                     valid_fraction=0.25).fit(LinkGraph(t))
    assert set(m.valid_mrr) == {"metapath", "common_neighbors", "ensemble"}
    assert all(m.weights[k] == m.valid_mrr[k] for k in m.weights)
    assert m.valid_mrr["ensemble"] >= max(m.valid_mrr[k] for k in m.weights)


def test_unknown_predictor_and_bad_parameters() -> None:
    with pytest.raises(InvalidArgument, match="unknown predictor"):
        lp.predictor("ultra")
    with pytest.raises(InvalidArgument, match="bad parameters"):
        lp.predictor("complex", dims=3)
    assert {"adamic_adar", "complex", "ensemble", "metapath", "seed", "text"} <= set(lp.predictors())


# -- link_predictor(kg) on a KG ----------------------------------------------------------------------------
def family_kg(ws: kgos.Workspace) -> kgos.KG:
    """The family triples as a native KG 'fam' of person nodes."""
    kg = ws.create("fam")
    with kg.batch():
        for h, r, t in family():
            for node in (h, t):
                if kg.get_node(node) is None:
                    kg.add_node(node, type="person", id=node)
            kg.add_edge(h, t, r)
    return kg


@pytest.fixture
def fam(ws: kgos.Workspace) -> kgos.KG:
    kg = family_kg(ws)
    kg.add_node("Oak", type="tree", id="oak")
    kg.add_node("Hermit", type="person", id="hermit")
    return kg


FAST = {"predictor": "ensemble", "members": ["metapath", "adamic_adar"], "params": {"metapath": {"max_length": 2}}}


def test_discover_filters_existing_self_types_and_rejections(fam: kgos.KG) -> None:
    res = link_predictor(fam).tails("g0", "grandparent", k=5, **FAST)
    got = [(p.source, p.target, p.type) for p in res.predictions]
    assert got[0] == ("g0", "c0b", "grandparent")
    assert ("g0", "c0a", "grandparent") not in got and all(p.target not in ("g0", "oak") for p in res.predictions)
    top = res.predictions[0]
    assert top.evidence["rules"][0]["path"] == ["parent", "parent"] and set(top.scores) <= {"metapath", "adamic_adar"}
    pid = link_predictor(fam).stage([top], "ensemble").added[0]
    fam.proposals.reject(pid)
    again = link_predictor(fam).tails("g0", "grandparent", k=5, **FAST)
    assert ("g0", "c0b", "grandparent") not in [(p.source, p.target, p.type) for p in again.predictions]
    heads = link_predictor(fam).heads("c0b", "grandparent", k=3, **FAST)
    assert all(p.target == "c0b" for p in heads.predictions)
    d = link_predictor(fam).discover("p1", k=4, **FAST)
    assert d.predictions and all("p1" in (p.source, p.target) for p in d.predictions)


def test_run_stages_the_best_predictions_for_review(fam: kgos.KG) -> None:
    report = link_predictor(fam).run(k=3, per_node=2, **FAST)
    assert len(report.queued.added) == len(report.predictions) == 3 and report.nodes == fam.node_count()
    total, pending = fam.proposals.list()
    assert total == 3 and pending[0].origin == "ensemble" and pending[0].evidence["rank"] >= 1
    p = fam.proposals.accept(pending[0].id)
    edge = fam.store.get_edge(p.source, p.target, p.type)
    assert edge is not None and edge.properties["prediction_id"] == p.id
    assert link_predictor(fam).run(k=3, per_node=2, **FAST).queued.skipped_accepted == 0  # the accepted edge now exists


def test_a_run_reports_its_progress_node_by_node(fam: kgos.KG) -> None:
    """What the CLI's bar and ETA are drawn from: the node count once, then one step per node."""
    totals: list[int] = []
    steps: list[int] = []
    report = link_predictor(fam).run(k=3, per_node=2, queue=False, progress=steps.append, total=totals.append, **FAST)
    assert totals == [report.nodes] and steps == [1] * report.nodes


def test_a_run_asks_each_node_for_no_more_than_k(fam: kgos.KG) -> None:
    """A node can place at most k predictions in the overall top k, so per_node above k is cut to k."""
    wide, narrow = (link_predictor(fam).run(k=3, per_node=n, queue=False, **FAST) for n in (50, 3))
    assert [(p.source, p.target, p.type, p.score) for p in wide.predictions] == \
        [(p.source, p.target, p.type, p.score) for p in narrow.predictions]


def test_bad_input(fam: kgos.KG, ws: kgos.Workspace) -> None:
    with pytest.raises(InvalidArgument, match="unknown relation 'sibling'.*grandparent"):
        link_predictor(fam).tails("g0", "sibling", **FAST)
    with pytest.raises(kgos.NodeNotFound):
        link_predictor(fam).discover("nobody", **FAST)
    with pytest.raises(InvalidArgument):
        link_predictor(fam).discover("g0", k=0, **FAST)
    assert link_predictor(fam).discover("hermit", **FAST).predictions == ()  # no edges, no structural evidence
    empty = ws.create("empty")
    empty.add_node("x", id="x")
    with pytest.raises(NotTrained, match="no edges"):
        link_predictor(empty).discover("x", **FAST)
    assert empty.node_count() == 1 and empty.proposals.counts()["pending"] == 0


def test_one_relation_kg(ws: kgos.Workspace) -> None:
    kg = ws.create("chain")
    for i in range(6):
        kg.add_node(f"n{i}", id=f"n{i}")
    for i in range(5):
        kg.add_edge(f"n{i}", f"n{i + 1}", "next")
    res = link_predictor(kg).discover("n0", k=2, predictor="adamic_adar")
    assert [p.type for p in res.predictions] == ["next"] * len(res.predictions)


def test_holdout_evaluation_leaves_the_kg_as_it_was(fam: kgos.KG, tmp_path: Path) -> None:
    version, edges = fam.store.version(), fam.edge_count()
    m = link_predictor(fam).evaluate("metapath", holdout=0.2, seed=3, max_length=2)
    assert m.n == 2 * round(edges * 0.2) and 0 < m.mrr <= 1 and m.predictor == "metapath"
    assert fam.store.version() == version and fam.edge_count() == edges
    with pytest.raises(InvalidArgument, match="too small"):
        link_predictor(fam).evaluate("metapath", holdout=0.001)
    with pytest.raises(InvalidArgument, match="fraction"):
        link_predictor(fam).evaluate("metapath", holdout=1.5)
    path = tmp_path / "test.jsonl"
    path.write_text(json.dumps({"source": "g1", "target": "c1a", "type": "grandparent"}) + "\n")
    with pytest.raises(InvalidArgument, match="are in the KG"):
        link_predictor(fam).evaluate("metapath", test=path)
    fam.delete_edge("g2", "c2b", "grandparent")
    path.write_text(json.dumps({"source": "g2", "target": "c2b", "type": "grandparent"}) + "\n")
    m = link_predictor(fam).evaluate("metapath", test=path, max_length=2)
    assert m.n == 2 and m.mrr > 0.5


def test_predicting_on_a_read_only_attached_kg(ws: kgos.Workspace, tmp_path: Path) -> None:
    from api_helpers import attach_readonly
    attach_readonly(ws, tmp_path)
    kg = ws.kg("mem")
    report = link_predictor(kg).run(k=5, predictor="adamic_adar")
    assert report.nodes == 2 and kg.edge_count() == 1  # nothing supports a new edge; nothing was written
    res = link_predictor(kg).tails("a", "uses", k=3, predictor="adamic_adar")
    assert res.predictions == () and res.query["node"] == "a"


def test_predictor_parameters_out_of_range_are_clear_errors():
    from kgos.errors import InvalidArgument
    from kgos.linkpred import predictor
    for params in ({"seed": -1}, {"epochs": 10**9}, {"lr": float("nan")}, {"dim": 10**6}):
        with pytest.raises(InvalidArgument, match="bad parameter"):
            predictor("complex", **params)
    assert predictor("complex", seed=3, epochs=2).epochs == 2
