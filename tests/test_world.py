import collections

import pytest

from fedrl_kit.world.partition import equal_size_dirichlet, partition, topic_matrix
from fedrl_kit.world.tasks import TOPICS, generate_problems, make_tasks
from fedrl_kit.world.world import is_heldout, make_world


def test_every_topic_answer_is_exact():
    rows = generate_problems(700, seed=3)
    assert {r["topic"] for r in rows} == set(TOPICS) and len(TOPICS) >= 6
    for r in rows:
        p, a = r["prompt"], int(r["answer"])
        if r["topic"] in ("add", "sub", "mul", "mod"):
            assert eval(p.rstrip("=").replace("%", " % ")) == a  # the expression itself gives the answer
        elif r["topic"] == "max":
            x, y = map(int, p[4:-2].split(","))
            assert a == max(x, y)
        elif r["topic"] == "count":
            _, c, _, s = p.rstrip("=").split(" ")
            assert a == s.count(c)
        elif r["topic"] == "seq":
            t = list(map(int, p[5:].rstrip(",?").split(",")))
            assert a == t[-1] + (t[1] - t[0])


def test_generation_is_seed_deterministic_and_distinct():
    a, b = make_tasks(200, seed=7), make_tasks(200, seed=7)
    assert a["prompt"] == b["prompt"] and a["answer"] == b["answer"]
    assert make_tasks(200, seed=8)["prompt"] != a["prompt"]
    assert len(set(a["prompt"])) == 200
    assert a.column_names == ["prompt", "answer", "topic", "difficulty"]


def test_world_splits_are_disjoint_and_respect_heldout_region():
    w = make_world(seed=1, n_train=300, n_test=50, n_public=30, n_aux=20)
    sets = [set(d["prompt"]) for d in (w.train, w.test, w.public, w.aux)]
    assert [len(s) for s in sets] == [300, 50, 30, 20]
    for i in range(4):
        for j in range(i + 1, 4):
            assert not sets[i] & sets[j]
    assert all(is_heldout(p) for d in (w.test, w.public, w.aux) for p in d["prompt"])
    assert not any(is_heldout(p) for p in w.train["prompt"])


@pytest.mark.parametrize("bad", [dict(topics=("nope",)), dict(difficulties=(4,)), dict(n=-1)])
def test_generation_rejects_bad_arguments(bad):
    args = dict(n=5, seed=0) | bad
    with pytest.raises(ValueError):
        generate_problems(**args)


def test_partitions_cover_the_pool():
    w = make_world(n_train=400, n_test=5, n_public=0, n_aux=0)
    for how in ("iid", "dirichlet"):
        parts = partition(w.train, 4, how, alpha=0.3, seed=0)
        assert sum(len(p) for p in parts) == 400
        assert len({x for p in parts for x in p["prompt"]}) == 400  # nobody holds a row twice
    patho = partition(w.train, 4, "pathological", topics_per_client=2, seed=0)
    assert all(len(set(p["topic"])) <= 2 for p in patho)
    held = {t for p in patho for t in p["topic"]}
    # rows of topics that no client was assigned are left out, all others are handed out once
    assert sum(len(p) for p in patho) == sum(1 for t in w.train["topic"] if t in held)


def test_dirichlet_small_alpha_is_more_heterogeneous_than_iid():
    w = make_world(n_train=700, n_test=5, n_public=0, n_aux=0)

    def mean_top_share(parts):
        _, c = topic_matrix(parts)
        return (c.max(axis=1) / c.sum(axis=1)).mean()

    assert mean_top_share(partition(w.train, 4, "dirichlet", alpha=0.1, seed=0)) > \
        mean_top_share(partition(w.train, 4, "iid", seed=0)) + 0.2


def test_equal_size_gives_exactly_equal_clients():
    w = make_world(n_train=403, n_test=5, n_public=0, n_aux=0)
    parts = equal_size_dirichlet(w.train, 4, alpha=0.3, seed=0)
    assert [len(p) for p in parts] == [100] * 4
    assert len({x for p in parts for x in p["prompt"]}) == 400
    assert partition(w.train, 4, "dirichlet", equal_size=True)[0].num_rows == 100


@pytest.mark.parametrize("kw", [dict(num_clients=0), dict(how="nope"), dict(alpha=0.0), dict(num_clients=10**6)])
def test_partition_rejects_bad_arguments(kw):
    w = make_world(n_train=50, n_test=5, n_public=0, n_aux=0)
    args = dict(num_clients=2, how="dirichlet") | kw
    with pytest.raises(ValueError):
        partition(w.train, **args)


def test_dirichlet_redraws_when_flwr_gives_up_and_keeps_partitions_it_can_make():
    from flwr_datasets.partitioner import DirichletPartitioner

    w = make_world(n_train=2000, n_test=5, n_public=0, n_aux=0)
    # K = 20 at alpha = 0.1, seed 0: flwr-datasets' own 10 attempts all leave a client under 10 rows
    p = DirichletPartitioner(num_partitions=20, partition_by="topic", alpha=0.1, min_partition_size=10, seed=0)
    p.dataset = w.train
    with pytest.raises(ValueError, match="max number of attempts"):
        p.load_partition(0)
    parts = partition(w.train, 20, "dirichlet", alpha=0.1, seed=0)
    assert min(len(x) for x in parts) >= 10 and sum(len(x) for x in parts) == 2000
    # where flwr succeeds the partition is its own draw for the seed, unchanged
    ok = DirichletPartitioner(num_partitions=20, partition_by="topic", alpha=0.1, min_partition_size=10, seed=1)
    ok.dataset = w.train
    assert [len(x) for x in partition(w.train, 20, "dirichlet", alpha=0.1, seed=1)] == \
        [len(ok.load_partition(i)) for i in range(20)]


def test_dirichlet_that_cannot_meet_the_minimum_names_the_fix():
    w = make_world(n_train=100, n_test=5, n_public=0, n_aux=0)
    with pytest.raises(ValueError, match="raise dirichlet_alpha"):
        partition(w.train, 20, "dirichlet", alpha=0.01, seed=0, min_size=5)


def test_an_arith_world_name_picks_topics_and_difficulties():
    from fedrl_kit.world.registry import arith_selection, check_world

    assert arith_selection("arith:add,max@1") == (("add", "max"), (1,))
    assert arith_selection("arith@1,2")[1] == (1, 2) and arith_selection("arith")[0] == tuple(TOPICS)
    assert arith_selection("families:math") is None and arith_selection("math") is None
    for bad in ("arith:", "arith:pow", "arith@4", "arith:add@", "arith@one"):
        with pytest.raises(ValueError, match="'arith:' \\+ a comma-separated subset"):
            check_world(bad)


def test_a_small_arith_pool_supplies_all_its_region_holds_and_refuses_more():
    from fedrl_kit.config import preset
    from fedrl_kit.world.registry import build_world

    cfg = preset("quick", world="arith:add,max@1", n_train=140, n_test=40, n_public=0, n_aux=0, num_clients=3)
    world = build_world(cfg)
    assert set(world.train["topic"]) == set(world.test["topic"]) == {"add", "max"}
    assert set(world.train["difficulty"]) == {1} and len(world.train) == 140  # 200 one-digit problems, 3/4 of them
    assert not set(world.train["prompt"]) & set(world.test["prompt"])           # outside the held-out region
    assert cfg.rewards == ("accuracy",)
    with pytest.raises(ValueError, match="cannot supply 160 distinct training .* ask for fewer"):
        build_world(cfg.replace(n_train=160))
