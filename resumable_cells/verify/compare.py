"""Normalising a cell's outputs and comparing two runs of it.

What counts as the cell's output (and so is compared):
- Stream text, with consecutive stream outputs merged per name; within one run of
  streams, stdout before stderr (the kernel flushes them on separate timers, so their
  interleaving is not the cell's doing).
- Display data and execute results: output type, mime bundle and metadata.
- Errors: ename and evalue (not the traceback, whose frames name the magic).
- Memory addresses in text (`<Figure at 0x7f3a...>`) read as `0x…`: no run repeats one.
- The file a cell is compiled under (in warnings and SyntaxErrors) reads as `<cell>`.

What is the extension's own and is set aside (`Step`):
- Its status line: display data whose metadata has a `resumable_cells` key.
- Its messages: stderr lines `step NAME: ...` of a stepped run that the plain run of
  the cell did not print.
"""

from __future__ import annotations

import re
from itertools import zip_longest

import msgspec

ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{6,}\b")
# The file IPython compiles a cell under (`/tmp/ipykernel_4711/2197516680.py:11` in a
# warning, `(2197516680.py, line 3)` in a SyntaxError): its directory names the kernel's
# pid and its line counts the `%%step` line verify adds.
CELL_FILE = re.compile(r"(?:[^\s'\"()]*/)?(?:ipykernel_\d+/)?-?\d{6,}\.py(?::\d+|, line \d+)?")
MESSAGE = re.compile(r"^step \S+: ")
# the reason a step ran, after any duration (`133 ms`, `1.20 s`, `2 min 3 s`)
STATUS_REASON = re.compile(r": ran in [^(]+? \((.*)\)$", re.S)


class Step(msgspec.Struct):
    """What the extension said about one cell in a stepped run."""

    status: str | None = None  # hit | live | effect; None: no status line (error, hung)
    name: str | None = None
    reason: str | None = None  # why it ran, from `ran in 0.1 s (REASON)`
    messages: list[str] = msgspec.field(default_factory=list)  # `step NAME: ...` on stderr

    @property
    def not_cached(self) -> str | None:
        """The first sentence of a `not cached: ...` message, if the step got one."""
        for m in self.messages:
            said = MESSAGE.sub("", m, count=1)
            if said.startswith("not cached: "):
                return said.split(". ")[0]
        return None


def user_outputs(outputs: list[dict], plain_stderr: str = "") -> tuple[list[dict], Step]:
    """The cell's own outputs, normalised, and what the extension said (pass the plain
    run's stderr so that a line the cell itself prints is never taken for a message)."""
    step = Step()
    own = set(plain_stderr.splitlines())
    kept: list[dict] = []
    for o in joined_streams(outputs):
        meta = o.get("metadata") or {}
        if o.get("output_type") == "display_data" and "resumable_cells" in meta:
            _read_status(o, meta["resumable_cells"], step)
            continue
        if o.get("output_type") == "stream" and o.get("name") == "stderr":
            text, said = _split_messages(o.get("text", ""), own)
            step.messages += said
            o = {**o, "text": text}
        kept.append(o)
    return normalise(kept), step


def joined_streams(outputs: list[dict]) -> list[dict]:
    """Consecutive messages of one stream as one output, as a frontend shows them: a
    line written by `print` can arrive in two messages (the kernel flushed between its
    two writes), and a message split from its newline would not read as a message."""
    out: list[dict] = []
    for o in outputs:
        last = out[-1] if out else None
        if (
            o.get("output_type") == "stream"
            and last is not None
            and last.get("output_type") == "stream"
            and last.get("name") == o.get("name")
        ):
            out[-1] = {**last, "text": last.get("text", "") + o.get("text", "")}
        else:
            out.append(o)
    return out


def _read_status(output: dict, meta: dict, step: Step) -> None:
    step.status, step.name = meta.get("status"), meta.get("step")
    text = (output.get("data") or {}).get("text/plain", "")
    match = STATUS_REASON.search(text)
    step.reason = match.group(1) if match else None


def _split_messages(text: str, own: set[str]) -> tuple[str, list[str]]:
    keep: list[str] = []
    said: list[str] = []
    for line in text.splitlines(keepends=True):
        bare = line.rstrip("\n")
        (said if MESSAGE.match(bare) and bare not in own else keep).append(line)
    return "".join(keep), [s.rstrip("\n") for s in said]


def stderr_of(outputs: list[dict]) -> str:
    return "".join(
        o.get("text", "")
        for o in outputs
        if o.get("output_type") == "stream" and o.get("name") == "stderr"
    )


def normalise(outputs: list[dict]) -> list[dict]:
    out: list[dict] = []
    streams: dict[str, str] | None = None  # the run of stream outputs being merged
    for o in outputs:
        kind = o.get("output_type")
        if kind == "stream":
            if streams is None:
                streams = {}
                out.append({"streams": streams})
            name = o.get("name", "stdout")
            streams[name] = streams.get(name, "") + _text(o.get("text", ""))
            continue
        streams = None
        if kind in ("display_data", "execute_result"):
            out.append({"output_type": kind, "data": _bundle(o.get("data") or {}),
                        "metadata": dict(o.get("metadata") or {})})  # fmt: skip
        elif kind == "error":
            out.append({"output_type": "error", "ename": o.get("ename"),
                        "evalue": _text(o.get("evalue", ""))})  # fmt: skip
    return _expand_streams(out)


def _expand_streams(items: list[dict]) -> list[dict]:
    out = []
    for item in items:
        if "streams" not in item:
            out.append(item)
            continue
        for name in sorted(item["streams"], key=lambda n: (n != "stdout", n)):
            if item["streams"][name]:
                out.append({"output_type": "stream", "name": name, "text": item["streams"][name]})
    return out


def _bundle(data: dict) -> dict:
    return {m: _text(v) if m.startswith("text/") else v for m, v in data.items()}


def _text(value) -> str:
    text = "".join(value) if isinstance(value, list) else str(value)
    return CELL_FILE.sub("<cell>", ADDRESS.sub("0x…", text))


# -- describing a difference ---------------------------------------------------------
def difference(expected: list[dict], got: list[dict]) -> str | None:
    """None when the normalised outputs are equal, else a line on the first difference."""
    if expected == got:
        return None
    for i, (a, b) in enumerate(zip_longest(expected, got), 1):
        if a == b:
            continue
        if a is None:
            return f"extra output {i}: {summary(b)}"
        if b is None:
            return f"output {i} missing: {summary(a)}"
        if _kind(a) != _kind(b):
            return f"output {i}: {summary(a)} became {summary(b)}"
        return f"output {i}: {_detail(a, b)}"
    return "outputs differ"  # unreachable: unequal lists differ somewhere


def _kind(o: dict) -> str:
    return o["output_type"] + (":" + o["name"] if o["output_type"] == "stream" else "")


def summary(o: dict) -> str:
    kind = o["output_type"]
    if kind == "stream":
        return f"{o['name']} {_clip(o['text'])}"
    if kind == "error":
        return f"error {o['ename']}: {_clip(o['evalue'])}"
    mimes = ", ".join(sorted(o["data"]))
    plain = o["data"].get("text/plain")
    return f"{kind} [{mimes}]" + (f" {_clip(plain)}" if plain else "")


def _detail(a: dict, b: dict) -> str:
    kind = a["output_type"]
    if kind == "stream":
        return f"{a['name']}: {_first_line_diff(a['text'], b['text'])}"
    if kind == "error":
        return f"error {a['ename']}: {_clip(a['evalue'])} became {_clip(b['evalue'])}"
    if set(a["data"]) != set(b["data"]):
        return f"{kind} [{', '.join(sorted(a['data']))}] became [{', '.join(sorted(b['data']))}]"
    for mime in sorted(a["data"]):
        x, y = a["data"][mime], b["data"][mime]
        if x != y:
            if isinstance(x, str) and isinstance(y, str) and mime.startswith("text/"):
                return f"{kind} {mime}: {_first_line_diff(x, y)}"
            return f"{kind} {mime} differs ({len(str(x))} vs {len(str(y))} characters)"
    return f"{kind} metadata {a['metadata']!r} became {b['metadata']!r}"


def _first_line_diff(x: str, y: str) -> str:
    xs, ys = x.splitlines(), y.splitlines()
    for n, (p, q) in enumerate(zip_longest(xs, ys), 1):
        if p != q:
            return f"line {n}: {_clip(p)} became {_clip(q)}"
    return f"{_clip(x)} became {_clip(y)}"  # the same lines: only line endings differ


def _clip(text: str | None, width: int = 60) -> str:
    if text is None:
        return "(nothing)"
    text = text.strip().replace("\n", "⏎")
    return repr(text if len(text) <= width else text[: width - 1] + "…")
