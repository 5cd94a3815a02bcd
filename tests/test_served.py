"""Cells that can be served are served: cases from public notebooks that were refused
although their values store and restore faithfully."""

from __future__ import annotations


def test_a_fitted_meta_estimator_over_an_unfitted_input_is_served(kernel):
    # The unit refers to `rf` (an input); asking its size for a fallback called the
    # forest's own __len__, which raises AttributeError until it is fitted: that was
    # taken for a value that cannot be pickled.
    kernel.ok(
        "from sklearn.datasets import make_classification\n"
        "from sklearn.feature_selection import SelectFromModel\n"
        "from sklearn.ensemble import RandomForestClassifier\n"
        "X, y = make_classification(n_samples=200, random_state=0)"
    )
    kernel.ok("%%step rf\nrf = RandomForestClassifier(n_estimators=5, random_state=0)")
    cell = "%%step sel\nselect = SelectFromModel(rf)\nselect.fit(X, y)\nn = select.transform(X).shape[1]"
    first = kernel.ok(cell)
    assert "not cached" not in " ".join(first.status_lines()), first.status_lines()
    live = kernel.value("(n, select.estimator is rf, hasattr(select, 'estimator_'))")
    second = kernel.ok(cell)
    assert "served from cache" in second.status_lines()[0], second.status_lines()
    assert kernel.value("(n, select.estimator is rf, hasattr(select, 'estimator_'))") == live


def test_a_cell_sharing_a_default_name_with_a_cached_one_says_why_it_is_not_cached(
    kernel, tmp_path
):
    cached = "%%step\nx = 1"
    effect = f"%%step\nx = open({str(tmp_path / 'out.txt')!r}, 'w').write('a')"
    kernel.ok(cached)
    kernel.ok(effect)
    kernel.ok(cached)
    again = kernel.ok(effect).status_lines()[0]
    assert "not cached: it wrote" in again and "last time" in again, again
    assert "code changed" not in again


def _streams(reply) -> list[tuple[str, str]]:
    return [(o["name"], o["text"]) for o in reply.user_outputs() if "name" in o]


def test_stderr_written_before_stdout_replays_in_the_order_the_frontend_received(kernel):
    body = "import sys\nsys.stderr.write('w\\n')\nprint('r')"
    plain = _streams(kernel.ok(body))
    live = kernel.ok(f"%%step order\n{body}")
    served = kernel.ok(f"%%step order\n{body}")
    assert "served from cache" in served.status_lines()[0]
    assert _streams(live) == _streams(served) == plain == [("stdout", "r\n"), ("stderr", "w\n")]


def test_streams_around_a_display_keep_their_places(kernel):
    body = (
        "import sys\nfrom IPython.display import display\n"
        "print('a')\nsys.stderr.write('b\\n')\ndisplay('shown')\nsys.stderr.write('c\\n')\nprint('d')"
    )
    plain = kernel.ok(body).user_outputs()
    live = kernel.ok(f"%%step around\n{body}").user_outputs()
    served = kernel.ok(f"%%step around\n{body}").user_outputs()

    def shape(outputs):
        return [o.get("name") or o["output_type"] for o in outputs]

    assert shape(live) == shape(served) == shape(plain), (shape(plain), shape(live))
