"""A step that registers something with a library (a virtual subclass, a codec, an exit
function, a MIME type, a colormap, a pandas extension dtype, tqdm's pandas methods) is
not cached: a hit calls nothing, and after a restart a later cell would find the
registration missing. What a library registers as it is imported is no such effect."""

from __future__ import annotations

import pytest
from steps import never_cached, served, status

# case -> (a plain cell before, the step's body, what it is said to do, a check after it)
CASES = {
    "virtual subclass": (
        "",
        "from collections.abc import Sequence\nclass Rows:\n    pass\nSequence.register(Rows)",
        "registered a virtual subclass (Rows of Sequence)",
        "isinstance(Rows(), Sequence)",
    ),
    "codec": (
        "",
        "import codecs\ndef search(name):\n    return codecs.lookup('utf-8') if name == 'mine' "
        "else None\ncodecs.register(search)",
        "registered a codec search function (search)",
        "__import__('codecs').lookup('mine').name == 'utf-8'",
    ),
    "exit function": (
        "",
        "import atexit\ndef bye():\n    pass\natexit.register(bye)",
        "registered an exit function (bye)",
        "callable(bye)",
    ),
    "exit function, from a thread the step starts": (
        "",
        "import atexit, threading\ndef bye():\n    pass\ndef _register():\n"
        "    atexit.register(bye)\n_t = threading.Thread(target=_register)\n_t.start()\n"
        "_t.join()\ndel _t",
        "registered an exit function (bye)",
        "callable(bye)",
    ),
    "MIME type": (
        "",
        "import mimetypes\nmimetypes.add_type('text/x-rows', '.rows')",
        "added a MIME type (.rows as text/x-rows)",
        "mimetypes.guess_type('a.rows')[0] == 'text/x-rows'",
    ),
    "tqdm, imported by the step": (
        "",
        "import pandas as pd\nfrom tqdm.auto import tqdm\ntqdm.pandas()",
        "added tqdm's progress methods to pandas",
        "hasattr(pd.DataFrame, 'progress_apply')",
    ),
    "colormap, imported before": (
        "import matplotlib\nmatplotlib.use('Agg')\nfrom matplotlib.colors import ListedColormap",
        "matplotlib.colormaps.register(ListedColormap(['red', 'blue'], name='rb'), force=True)",
        "registered a colormap (rb)",
        "'rb' in matplotlib.colormaps",
    ),
    "colormap through pyplot, imported by the step": (
        "",
        "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        "from matplotlib.colors import ListedColormap\n"
        "plt.colormaps.register(ListedColormap(['red', 'blue'], name='rb2'), force=True)",
        "registered a colormap (rb2)",
        "'rb2' in plt.colormaps",
    ),
    "pandas extension dtype": (
        "import pandas as pd",
        "from pandas.api.extensions import ExtensionDtype, register_extension_dtype\n"
        "@register_extension_dtype\nclass RowsDtype(ExtensionDtype):\n    name = 'rows'\n"
        "    type = object\n    @classmethod\n    def construct_array_type(cls):\n"
        "        raise NotImplementedError",
        "registered a pandas extension dtype (rows)",
        "str(pd.api.types.pandas_dtype('rows')) == 'rows'",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_step_that_registers_with_a_library_is_not_cached(kernel, case):
    before, body, said, later = CASES[case]
    if before:
        kernel.ok(before)

    def registered() -> None:
        assert kernel.value(later), later

    never_cached(kernel, f"%%step registers\n{body}", said, registered)
    # the library's functions are its own again, and the import finder is gone
    assert kernel.value("type(__import__('atexit').register).__name__") == (
        "builtin_function_or_method"
    )
    assert not kernel.value("[f for f in __import__('sys').meta_path if 'resumable' in repr(f)]")


def test_what_a_library_registers_as_it_is_imported_is_no_effect(kernel):
    # pandas registers its own dtypes and ABCs, matplotlib its colormaps and projections;
    # a cell that compiles a string has `exec` wrapped, through which imports run
    cell = (
        "%%step imports\nimport pandas as pd\nimport matplotlib\nmatplotlib.use('Agg')\n"
        "import matplotlib.pyplot as plt\nframe = pd.DataFrame({'a': pd.Categorical(['x'])})\n"
        "expr = '1 + 1'\ntwo = eval(expr)"
    )
    r = kernel.ok(cell)
    assert "not cached" not in r.stderr, r.stderr
    assert served(kernel.ok(cell))
    assert kernel.value("str(frame.a.dtype)") == "category"


def test_a_registration_by_a_step_marked_as_an_effect_runs_each_time(kernel):
    cell = "%%step registers --effect\nimport mimetypes\nmimetypes.add_type('text/x-e', '.e')"
    for _ in range(2):
        r = kernel.ok(cell)
        assert "not cached" not in r.stderr and "ran" in status(r), r.stderr
    assert kernel.value("mimetypes.guess_type('a.e')[0]") == "text/x-e"
