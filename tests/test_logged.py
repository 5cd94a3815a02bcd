"""A step's log lines follow the configuration of the loggers it logged to: a hit made
under another (a level, a format, a handler set in a plain cell since) runs the step
and shows what a plain cell shows; under the same one it is served
(`state/settings_read.py`, `loggers.Effective`, `state/shown.py`)."""

from __future__ import annotations

import pytest

STEP = "%%step lg\nimport logging\nn = 3\nlogging.getLogger('pipe').info('loaded %d rows', n)"
INFO = "import logging\nlogging.basicConfig(level=logging.INFO, force=True)"


@pytest.mark.parametrize(
    "then",
    [
        "import logging\nlogging.basicConfig(level=logging.WARNING, force=True)",
        "import logging\nlogging.basicConfig(level=logging.INFO, format='%(levelname)s | %(message)s', force=True)",
        "import logging\nlogging.getLogger('pipe').setLevel(logging.ERROR)",
        "import logging\nlogging.disable(logging.INFO)",
    ],
    ids=["root-level", "format", "logger-level", "disable"],
)
def test_a_hit_under_another_logging_configuration_runs_and_shows_what_a_plain_cell_shows(
    kernel, then
):
    kernel.ok(INFO)
    assert "loaded 3 rows" in kernel.ok(STEP).stderr
    kernel.ok(then)
    plain = kernel.ok(STEP.partition("\n")[2]).stderr
    again = kernel.ok(STEP)
    assert "the logging configuration changed since it ran" in again.status_lines()[-1]
    assert again.stderr == plain


def test_the_same_configuration_in_a_new_kernel_is_served_with_its_log_lines(kernel):
    kernel.ok(INFO)
    live = kernel.ok(STEP).stderr
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    kernel.ok(INFO)
    served = kernel.ok(STEP)
    assert "served" in served.status_lines()[-1]
    assert served.stderr == live == "INFO:pipe:loaded 3 rows\n"


def test_a_step_whose_libraries_ask_their_loggers_is_served_while_nothing_changed(kernel):
    # matplotlib asks its loggers whether to write debug lines as it draws
    cell = (
        "%%step fig\nimport matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\nax.plot([1, 2, 3])\nfig.canvas.draw()\nplt.close(fig)"
    )
    kernel.ok(cell)
    kernel.restart()
    kernel.ok("%load_ext resumable_cells")
    assert "served" in kernel.ok(cell).status_lines()[-1]
    kernel.ok("import logging\nlogging.getLogger('matplotlib').setLevel(logging.DEBUG)")
    kernel.ok("import logging\nlogging.basicConfig(level=logging.DEBUG, force=True)")
    assert "the logging configuration changed" in kernel.ok(cell).status_lines()[-1]


def test_loggers_the_kernels_other_threads_ask_while_a_step_runs_are_not_the_steps(kernel):
    # In JupyterLab the kernel's control thread logs while a cell runs; counted as the
    # step's, its logger's configuration in a new kernel made every resume run the step
    # ("the logging configuration changed since it ran"). So would a library's thread an
    # earlier cell started, whose file handler a new kernel names anew.
    kernel.ok(
        "import logging, threading, time\n"
        "_stop = threading.Event()\n"
        "def _chatter():\n"
        "    while not _stop.is_set():\n"
        "        logging.getLogger('kernel.chatter').debug('tick')\n"
        "        time.sleep(0.001)\n"
        "_t = threading.Thread(target=_chatter, daemon=True)\n"
        "_t.start()"
    )
    step = (
        "%%step quiet\n"
        "def _in_a_thread():\n"
        "    logger = logging.getLogger('step.worker')\n"
        "    worker = threading.Thread(target=logger.debug, args=('in a thread of the step',))\n"
        "    worker.start()\n"
        "    worker.join()\n"
        "_in_a_thread()\n"
        "time.sleep(0.2)\n"
        "v = 1"
    )
    kernel.ok(step)
    kernel.ok("_stop.set()\n_t.join()")
    kernel.ok("logging.getLogger('kernel.chatter').setLevel(logging.DEBUG)")
    assert "served from cache" in kernel.ok(step).status_lines()[-1]
    kernel.ok("logging.getLogger('step.worker').setLevel(logging.DEBUG)")  # (the step's own)
    again = kernel.ok(step).status_lines()[-1]
    assert "the logging configuration changed since it ran" in again, again


def test_a_thread_the_step_starts_on_the_ident_of_a_kernel_thread_that_ended_is_the_steps(
    kernel,
):
    # A thread's ident is reused once it ends (glibc hands the next thread the freed
    # stack): told apart by ident, the step's worker would pass for the kernel's thread
    # that ended during the step, and a changed level of its logger would be served.
    # (kept out of the step's inputs, in a module: a thread that ended is another value)
    kernel.ok(
        "import logging, sys, threading\n"
        "sys.kernel_thread = (threading.Event(), None)\n"
        "sys.kernel_thread = (sys.kernel_thread[0], threading.Thread(target=sys.kernel_thread[0].wait, daemon=True))\n"
        "sys.kernel_thread[1].start()"
    )
    step = (
        "%%step quiet\n"
        "import os, time\n"
        "sys.kernel_thread[0].set()\n"
        "sys.kernel_thread[1].join()\n"
        # (joined, a thread may not have exited yet: glibc takes its stack back then)
        "_gone = f'/proc/self/task/{sys.kernel_thread[1].native_id}'\n"
        "_until = time.monotonic() + 30\n"
        "while os.path.exists(_gone) and time.monotonic() < _until:\n"
        "    time.sleep(0.001)\n"
        "_idents = []\n"
        "def _log():\n"
        "    _idents.append(threading.get_ident())\n"
        "    logging.getLogger('step.reused').debug('on a reused ident')\n"
        "_worker = threading.Thread(target=_log)\n"
        "_worker.start()\n"
        "_worker.join()\n"
        "del _worker\n"
        "reused = _idents[0] == sys.kernel_thread[1].ident\n"
        "v = 2"
    )
    kernel.ok(step)
    if not kernel.value("reused"):  # (a thread freeing its stack meanwhile: another ident)
        pytest.skip("the step's thread did not get the ended thread's ident this time")
    assert "served from cache" in kernel.ok(step).status_lines()[-1]
    kernel.ok("logging.getLogger('step.reused').setLevel(logging.DEBUG)")
    again = kernel.ok(step).status_lines()[-1]
    assert "the logging configuration changed since it ran" in again, again


def test_a_pool_an_earlier_cell_made_logs_for_the_step_whose_work_it_runs(kernel):
    # Its workers ran before the step, yet log what the step asked them to: a hit after
    # their logger was quieted would replay lines a live run no longer shows.
    kernel.ok(
        "import logging, concurrent.futures as cf\n"
        "logging.basicConfig(level=logging.INFO, force=True)\n"
        "pool = cf.ThreadPoolExecutor(2)\n"
        "list(pool.map(abs, range(4)))"  # (its workers are running before the step)
    )
    body = (
        "def work(i):\n"
        "    logging.getLogger('work').info('item %d', i)\n"
        "    return i * 2\n"
        "res = sorted(pool.map(work, range(3)))"
    )
    step = "%%step fetch --ignore pool\n" + body
    assert "INFO:work:item 2" in kernel.ok(step).stderr
    assert "served from cache" in kernel.ok(step).status_lines()[-1]
    kernel.ok("logging.getLogger('work').setLevel(logging.WARNING)")
    again = kernel.ok(step)
    assert "the logging configuration changed since it ran" in again.status_lines()[-1]
    assert again.stderr == kernel.ok(body).stderr == ""
