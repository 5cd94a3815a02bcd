"""A step that leaves the notebook's code to run after it ends (a thread, an asyncio task
or callback, an IPython callback, transformer or magic, a signal handler, a trace
function) is not cached: a hit would start and register nothing, and a later cell would
not see what that code did. What a library starts for itself is no such effect."""

from __future__ import annotations

import pytest
from kernels import wait_until
from steps import never_cached, served

CASES = {
    "thread": (
        "import threading, time\nresults = []\ndef work():\n    time.sleep(0.3)\n"
        "    results.append(42)\nthreading.Thread(target=work, name='worker').start()",
        "left a thread running (worker)",
        "results == [42]",
    ),
    "timer": (
        "import threading\nflag = {'done': False}\n"
        "threading.Timer(0.3, lambda: flag.update(done=True)).start()",
        "left a thread running (Thread-",
        "flag['done']",
    ),
    "pool job": (
        "import time\nfrom concurrent.futures import ThreadPoolExecutor\nout = {}\n"
        "def job():\n    time.sleep(0.5)\n    out['x'] = 1\n"
        "ThreadPoolExecutor(1, thread_name_prefix='pool').submit(job)\ntime.sleep(0.05)",
        "left a thread running (pool_0)",
        "out == {'x': 1}",
    ),
    "asyncio task": (
        "import asyncio\nflag = {'done': False}\nasync def later():\n"
        "    await asyncio.sleep(0.2)\n    flag['done'] = True\nasyncio.ensure_future(later())",
        "left an asyncio task running (later)",
        "flag['done']",
    ),
    "loop callback": (
        "import asyncio\nflag = {'done': False}\ndef mark():\n    flag['done'] = True\n"
        "asyncio.get_running_loop().call_later(0.2, mark)",
        "scheduled a callback on the event loop (mark)",
        "flag['done']",
    ),
    "IPython callback": (
        "seen = []\ndef note(result):\n    seen.append(1)\n"
        "get_ipython().events.register('post_run_cell', note)",
        "registered an IPython post_run_cell callback (note)",
        "len(seen) > 0",
    ),
    "magic": (
        "from IPython.core.magic import register_line_magic\n@register_line_magic\n"
        "def hello(line):\n    return 'hello ' + line",
        "registered a line magic (hello)",
        "get_ipython().run_line_magic('hello', 'you') == 'hello you'",
    ),
    "input transformer": (
        "def shout(lines):\n    return [line.replace('LOUD', '1') for line in lines]\n"
        "get_ipython().input_transformers_post.append(shout)",
        "added an IPython input transformer (shout)",
        "shout in get_ipython().input_transformers_post",
    ),
    "signal handler": (
        "import signal\ngot = []\ndef on_usr1(signum, frame):\n    got.append(signum)\n"
        "signal.signal(signal.SIGUSR1, on_usr1)",
        "set a signal handler (SIGUSR1)",
        "__import__('signal').getsignal(10) is on_usr1",
    ),
    "pandas accessor": (
        "import pandas as pd\n@pd.api.extensions.register_dataframe_accessor('geo')\n"
        "class Geo:\n    def __init__(self, df):\n        self.df = df\n"
        "    def rows(self):\n        return len(self.df)",
        "registered a pandas accessor (Geo)",
        "pd.DataFrame({'a': [1, 2]}).geo.rows() == 2",
    ),
    "trace function": (
        "import threading\ndef tracer(frame, event, arg):\n    return None\n"
        "threading.settrace(tracer)",
        "set a trace function (tracer)",
        "threading.gettrace() is tracer",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_step_that_leaves_the_notebooks_code_running_is_not_cached(kernel, case):
    body, said, later = CASES[case]
    # never served: the second run starts or registers it again
    never_cached(
        kernel,
        f"%%step leaves\n{body}",
        said,
        lambda: wait_until(lambda: kernel.value(later), timeout=30, what=later),
    )


def test_a_thread_the_step_joins_is_no_effect(kernel):
    cell = (
        "%%step joined\nimport threading\nparts = []\n"
        "t = threading.Thread(target=parts.append, args=(1,))\nt.start()\nt.join()\ndel t"
    )
    assert "not cached" not in kernel.ok(cell).stderr
    assert served(kernel.ok(cell))
    assert kernel.value("parts") == [1]


def test_a_thread_another_thread_starts_during_the_step_is_not_the_steps(kernel):
    # A server started in a plain cell answers the step's request in a thread of its own
    # (the server's thread starts it), running the notebook's handler, which is still
    # busy when the step has read its answer and ended.
    kernel.ok(
        "import threading, time, urllib.request\n"
        "from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer\n"
        "busy = threading.Event()\n"
        "class Slow(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200)\n"
        "        self.send_header('Content-Length', '2')\n"
        "        self.end_headers()\n"
        "        self.wfile.write(b'ok')\n"
        "        self.wfile.flush()\n"
        "        busy.set()\n"
        "        time.sleep(1.0)  # still in the notebook's code as the step ends\n"
        "    def log_message(self, *args):\n"
        "        pass\n"
        "server = ThreadingHTTPServer(('127.0.0.1', 0), Slow)\n"
        "threading.Thread(target=server.serve_forever, daemon=True).start()\n"
        "URL = f'http://127.0.0.1:{server.server_address[1]}/'"
    )
    cell = (
        "%%step fetched --ttl 1h --ignore URL --ignore busy\n"
        "with urllib.request.urlopen(URL, timeout=10) as r:\n"
        "    answer = r.read(2).decode()\n"
        "busy.wait(5)"
    )
    r = kernel.ok(cell)
    assert "not cached" not in r.stderr, r.stderr
    assert kernel.value(
        "any(t.name.endswith('(process_request_thread)') and t.is_alive() "
        "for t in threading.enumerate())"
    )  # the handler was still running
    assert served(kernel.ok(cell))
    assert kernel.value("answer") == "ok"
    kernel.ok("server.shutdown()")


def test_a_thread_a_library_keeps_for_itself_is_no_effect(kernel):
    # tqdm's monitor thread, which tqdm starts with its first bar and keeps running
    cell = "%%step library\nfrom tqdm import tqdm\ntotal = sum(tqdm(range(3)))"
    r = kernel.ok(cell)
    assert "not cached" not in r.stderr, r.stderr
    assert kernel.value("__import__('tqdm').tqdm.monitor.is_alive()")
    assert served(kernel.ok(cell))
    assert kernel.value("total") == 3
