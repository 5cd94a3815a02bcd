"""Subprocesses that only query the system (CPU and memory probes) are not effects; any
other subprocess a pure step starts still is (real kernels)."""

from __future__ import annotations

import importlib.util

import pytest

from resumable_cells.engine.live.system_queries import is_query


def _served(reply) -> bool:
    return any("served from cache" in s for s in reply.status_lines())


def test_a_cpu_probe_is_not_an_effect_and_a_write_still_is(kernel):
    probe = "%%step cores\nimport subprocess\ncores = subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()"
    r = kernel.ok(probe)
    assert "not cached" not in r.stderr
    assert _served(kernel.ok(probe))
    touch = "%%step made\nimport subprocess\nsubprocess.run(['touch', 'made.txt'])"
    r = kernel.ok(touch)
    assert "not cached: it started a subprocess" in r.stderr
    assert not _served(kernel.ok(touch))


@pytest.mark.skipif(importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn")
def test_kmeans_and_gaussian_mixture_are_cached(kernel):
    cells = [
        "import numpy as np\nX = np.array([[1, 2], [1, 4], [1, 0], [10, 2], [10, 4], [10, 0]])",
        "%%step km\nfrom sklearn.cluster import KMeans\nkm = KMeans(n_clusters=2, random_state=0, n_init='auto').fit(X)",
        "%%step gm\nfrom sklearn.mixture import GaussianMixture\ngm = GaussianMixture(n_components=2, random_state=0).fit(X)",
    ]
    for c in cells:
        r = kernel.ok(c)
        assert "not cached" not in r.stderr, r.stderr
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    replies = [kernel.ok(c) for c in cells]
    assert all(_served(r) for r in replies[1:])
    assert kernel.value("sorted(km.labels_.tolist())") == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize(
    ("event", "args", "query"),
    [
        ("subprocess.Popen", ("lscpu", ["lscpu", "--parse=core"], None, None), True),
        ("subprocess.Popen", ("/bin/sh", ["/bin/sh", "-c", "nproc"], None, None), True),
        ("os.system", (b"getconf _NPROCESSORS_ONLN 2>/dev/null",), True),
        ("os.posix_spawn", ("/usr/sbin/sysctl", ["sysctl", "-n", "hw.ncpu"], {}), True),
        ("subprocess.Popen", (None, ["sysctl", "-w", "vm.swappiness=1"], None, None), False),
        ("subprocess.Popen", (None, "nproc; rm -rf data", None, None), False),
        ("os.system", (b"lscpu > cpus.txt",), False),
        ("subprocess.Popen", (None, ["touch", "made.txt"], None, None), False),
        ("os.exec", ("/usr/bin/lscpu", ["lscpu"], None), False),
    ],
)
def test_which_subprocesses_are_queries(event, args, query):
    assert is_query(event, args) is query
