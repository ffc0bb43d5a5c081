"""The on-call night's *What you should see* (solutions/ONCALL.ipynb): each act's chart from a real run, before and
after a right fix, made by the same command as the live demos' frames (`make seen`, grader/seen.py).

The night's acts are no live demo: nothing freezes a chart when they end, and the page's fix cells hold `...`, so a
learner's untouched Run All never shows the "after". So `record` runs the released page itself in a kernel of its
own, as a learner would, with a right fix typed into each fix cell (solutions/oncall-fixes.json: a cap with headroom, an
idempotent write, retention of days with failOnDataLoss=true), while a `Recorder` thread in that kernel samples
what the page's own tools read (the lag on the log, the sink's table, the progress, the log's first and last
offsets) and what each fix was graded. The samples go to <executed>/ONCALL-seen.json; `apply` draws the three
charts from them into solutions/figures/seen-oncall-<act>.png, with alt text that states the run's own numbers,
keeps the samples beside them (seen-oncall.json: anyone can check a chart against its run) and puts a folded cell
under each act's "What you should see". A run whose fix did not score 2/2, or whose chart
would not show its story (act 2 with no crash after the fix, say), is refused: run `make seen` again.
"""
from __future__ import annotations

import datetime
import json
import threading
import time
from pathlib import Path

from .course import PAGE_FIGURES, RELEASE, SOURCE, GraderError, place_below

PAGE = "ONCALL"
SAMPLES = f"{PAGE}-seen.json"  # in the executed folder, beside the modules' executed notebooks
SAMPLES_KEPT = "seen-oncall.json"  # the samples the figures were drawn from, kept beside them (tests read them)
UNDER = {1: "5341bd9f", 2: "12ed7e86", 3: "5c257372"}  # each act's "What you should see" cell
CELL_ID = "seen-oncall-{}"  # the cell under it, with the act's figure
FIGURE = "seen-oncall-{}.png"
SUMMARY = ("<b>What you should see</b>: this act in a recorded run, before and after a right fix (the black line): "
           "the fix's half is for after your own try. Your numbers will differ. The shape should not.")

# A right fix for each act, typed into its fix cell (tagged oncall-fix-<act>) for the recorded run only. They are
# answers, so they live in solutions/, which a hub's walls empty for learners (workshop/walls.py), not in grader/.
FIXES = SOURCE / "oncall-fixes.json"


def right_fixes(path: Path = FIXES) -> dict[str, str]:
    """{fix cell's tag: a right fix}, from the instructor's solutions/ (GraderError in one line without it)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise GraderError(f"{path}: the on-call night's right fixes are unreadable ({type(exc).__name__}): "
                          "make seen needs the instructor's copy of the course") from None

EVERY_S = 0.5  # the recorder's tick: the restart flag every tick, the broker and the table every other one
LOOK_S = 10  # the recorded run reads this long before each fix (as a learner would), the symptom going on
LINGER_S = 15  # ... and watches this long after each fix is graded, the fix still in force


# -- recording, in the kernel that runs the page --------------------------------------------------------------------
class Recorder:
    """Samples the act that runs in this kernel (streamlab.course.oncall's current act) until `save`."""

    def __init__(self):
        self.acts: dict[int, dict] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="seen-oncall-recorder", daemon=True)
        self._consumers: dict[int, object] = {}
        self._seen: dict[int, object] = {}  # each act sampled: its grades are read again at `save`

    def start(self) -> "Recorder":
        """Start sampling in a background thread."""
        self._thread.start()
        return self

    def save(self, path) -> dict:
        """Stop sampling and write the samples as JSON to `path`; the samples."""
        self._stop.set()
        self._thread.join(timeout=10)
        for act in self._seen.values():  # a fix graded after the last tick (the next act starts at once)
            self._graded(act)
        for consumer in self._consumers.values():
            consumer.close()
        Path(path).write_text(json.dumps({str(n): a for n, a in self.acts.items()}, separators=(",", ":")) + "\n")
        return self.acts

    def _run(self) -> None:
        from streamlab.course import oncall

        tick = 0
        while not self._stop.wait(EVERY_S):
            tick += 1
            act = oncall.current()
            if act is None or act.incident is None or not act.incident.started:
                continue
            try:
                self._sample(act, heavy=tick % 2 == 0)
            except Exception as exc:  # a broker busy or a topic being deleted: the next tick samples again
                self.acts.get(act.number, {}).setdefault("errors", []).append(f"{type(exc).__name__}: {exc}"[:200])

    def _record(self, act) -> dict:
        from streamlab.course import oncall

        inc = act.incident
        if act.number not in self.acts:
            self.acts[act.number] = {"act": act.number, "title": oncall.ACTS[act.number].title,
                                     "rate": oncall.act_rate(inc), "lag_seconds": oncall.LAG_SECONDS,
                                     "alert_seconds": oncall.ALERT_SECONDS, "pause_s": oncall.PAUSE_S,
                                     "samples": [], "batches": {}, "attempts": [], "crashes": []}
        return self.acts[act.number]

    def _graded(self, act) -> None:
        """Act's graded fixes (with when each began and was graded) and its crashes, into its record."""
        inc, rec = act.incident, self._record(act)
        rec["attempts"] = [{**grade, "began": round(began - inc.started, 2), "graded": round(end - inc.started, 2)}
                           for grade, (began, end) in zip(act.attempts, act.fixes)]
        rec["crashes"] = [[b, round(at - inc.started, 2)] for b, at in inc._crashes]

    def _sample(self, act, heavy: bool) -> None:
        from streamlab.course import incidents, oncall
        from streamlab.observe.lag import source_offsets
        from streamlab.observe.progress import as_dict

        inc, rec = act.incident, self._record(act)
        self._seen[act.number] = act
        t = round(time.monotonic() - inc.started, 2)
        wall0 = time.time() - (time.monotonic() - inc.started)  # the wall clock when the act started
        self._graded(act)
        sample = {"t": t, "restarting": bool(inc._restarting)}
        if act.number == 2:  # the sink's write function in force: it changes when the fix takes effect
            sample["write"] = getattr(inc._write, "__qualname__", "")
        if heavy:
            if act.number == 1:
                sample["lag"] = inc._log_lag()
            elif act.number == 2 and inc.table:
                sample.update(incidents.table_counts(inc.table).get(inc.topic, {}))
            elif act.number == 3:
                from kafka import TopicPartition

                consumer = self._consumers.get(3)
                if consumer is None:
                    from kafka import KafkaConsumer

                    consumer = self._consumers[3] = KafkaConsumer(bootstrap_servers=inc.bootstrap,
                                                                  enable_auto_commit=False)
                tp = TopicPartition(inc.topic, 0)
                sample["earliest"] = consumer.beginning_offsets([tp])[tp]
                sample["latest"] = consumer.end_offsets([tp])[tp]
                committed = oncall.committed_offsets(inc)
                if committed:  # a fresh checkpoint (the fix's) has none until its first batch commits
                    sample["position"] = sum(committed.values())
            try:
                events = [as_dict(e) for e in inc.query.recentProgress]
            except Exception:  # a query being restarted
                events = []
            for e in events:
                if not e.get("numInputRows") or not e.get("sources"):
                    continue
                source = e["sources"][0]
                start = source_offsets(source.get("startOffset")).get(inc.topic, {})
                end = source_offsets(source.get("endOffset")).get(inc.topic, {})
                at = datetime.datetime.fromisoformat(e["timestamp"].replace("Z", "+00:00")).timestamp() - wall0
                rec["batches"][f"{e['runId']}/{e['batchId']}"] = {  # a query's first batch: no start, no plan
                    "batch": e["batchId"], "t": round(at, 2), "rows": e["numInputRows"],
                    "planned": sum(o - start[p] for p, o in end.items() if p in start) if start else None}
        rec["samples"].append(sample)


def record(into: Path, release: Path = RELEASE, timeout: int = 600) -> Path:
    """Run the released page with the right fixes in a kernel of its own, a Recorder sampling it; the samples' path."""
    import nbformat

    from streamlab.lab.broker import broker_port, external_bootstrap, probe, stop_broker

    page = Path(release) / f"{PAGE}.ipynb"
    if not page.is_file():
        raise GraderError(f"{page}: no such page: run `make release`")
    into = Path(into).resolve()
    into.mkdir(parents=True, exist_ok=True)
    out = into / SAMPLES
    nb = nbformat.read(page, as_version=4)
    fixes = right_fixes()
    tagged = [cell for cell in nb.cells for tag in cell.metadata.get("tags", []) if tag in fixes]
    if len(tagged) != len(fixes):
        raise GraderError(f"{page}: {len(tagged)} of its {len(fixes)} fix cells are tagged oncall-fix-<act>")
    for cell in tagged:
        cell.source = next(fixes[t] for t in cell.metadata["tags"] if t in fixes)
        at = nb.cells.index(cell)
        nb.cells.insert(at + 1, nbformat.v4.new_code_cell(f"time.sleep({LINGER_S})  # the fix in force, recorded"))
        nb.cells.insert(at, nbformat.v4.new_code_cell(f"time.sleep({LOOK_S})  # a learner reading, recorded"))
    nb.cells.insert(0, nbformat.v4.new_code_cell("import time\n\nfrom grader.seen_oncall import Recorder\n\n"
                                                 "_recorder = Recorder().start()"))
    nb.cells.append(nbformat.v4.new_code_cell(f"_recorder.save({str(out)!r}); None"))
    out.unlink(missing_ok=True)  # a run that fails leaves no samples of an earlier one to draw
    # the page's setup cell starts the lab's broker when none runs: one started for this run is stopped after it
    ours = not external_bootstrap() and probe(f"127.0.0.1:{broker_port()}") != "kafka"
    started = time.monotonic()
    try:
        _run(nb, timeout)
    finally:
        if ours:
            stop_broker()
    said = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    night = next((line for text in said for line in text.splitlines() if line.startswith("the night:")), "?")
    print(f"ran       {PAGE} with a right fix in each act in {time.monotonic() - started:.0f} s ({night})", flush=True)
    return out


def _run(nb, timeout: int) -> None:
    """record()'s Run All: the page in a kernel of its own, with its own temporary folder."""
    import os
    import tempfile

    from nbclient import NotebookClient

    from .runner import kernel_started

    with tempfile.TemporaryDirectory(prefix="grader-seen-oncall-") as tmp:
        (Path(tmp) / "kernel-tmp").mkdir()
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"} | {
            "TMPDIR": str(Path(tmp) / "kernel-tmp")}
        client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                extra_arguments=["--IPKernelApp.log_level=ERROR"],
                                resources={"metadata": {"path": tmp}})
        with kernel_started(client, env=env):
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index)


# -- the charts -------------------------------------------------------------------------------------------------------
class Story(dict):
    """One act's samples as recorded, with the numbers its chart and alt text state."""

    @property
    def fixed_at(self) -> float:
        return self["attempts"][-1]["began"]

    @property
    def graded_at(self) -> float:
        return self["attempts"][-1]["graded"]

    def batches(self, planned: bool = False) -> list[dict]:
        """The batches that read rows, in time order (with `planned`, only those whose plan is known)."""
        return sorted((b for b in self["batches"].values() if not planned or b["planned"] is not None),
                      key=lambda b: b["t"])

    def series(self, key: str) -> tuple[list, list]:
        rows = [s for s in self["samples"] if key in s]
        return [s["t"] for s in rows], [s[key] for s in rows]

    @property
    def in_force_at(self) -> float:
        """When the fix took effect: act 2's new write function first seen (a batch of the old one may finish
        after the fix began); the fix's start otherwise."""
        if self["act"] == 2:
            first = self["samples"][0].get("write") if self["samples"] else None
            return next((s["t"] for s in self["samples"] if s["t"] >= self.fixed_at and s.get("write") != first),
                        self.fixed_at)
        return self.fixed_at

    def pauses(self) -> list[tuple[float, float]]:
        """The spans after the fix when the query was down (restarting) for about the deploy's pause."""
        spans, began = [], None
        for s in self["samples"]:
            if s["t"] < self.fixed_at:
                continue
            if s["restarting"] and began is None:
                began = s["t"]
            elif not s["restarting"] and began is not None:
                spans.append((began, s["t"]))
                began = None
        return [(a, b) for a, b in spans if b - a >= 0.75 * self["pause_s"]]


def check(story: Story) -> str:
    """'' when the recorded act shows its story; else why its chart would not (one line)."""
    n = story["act"]
    if not story["attempts"]:
        return f"act {n}: no fix was graded in the run"
    last = story["attempts"][-1]
    if last["points"] != last["of"]:
        return f"act {n}: the right fix scored {last['points']}/{last['of']} in the run ({last['evidence']})"
    before = [s for s in story["samples"] if s["t"] < story.fixed_at]
    after = [s for s in story["samples"] if s["t"] > story.fixed_at]
    if n == 1:
        lags = [s["lag"] for s in before if "lag" in s]
        if not lags or max(lags) <= story["alert_seconds"] * story["rate"]:
            return "act 1: the lag was never seen over the pager's line before the fix"
    elif n == 2:
        if not any(b_at > story.in_force_at for _, b_at in story["crashes"]):
            return "act 2: no crash was recorded after the fix"
        if not any(s.get("duplicates") for s in before):
            return "act 2: no copies were recorded in the table before the fix"
        if _added(story, "duplicates", story.in_force_at):
            return "act 2: copies were added to the table after the right fix"
    elif n == 3:
        early = [b for b in story.batches(planned=True) if b["t"] < story.fixed_at]
        late = [b for b in story.batches(planned=True) if b["t"] > story.fixed_at]
        if not any(b["planned"] > b["rows"] for b in early):
            return "act 3: no batch was recorded reading fewer rows than it planned before the fix"
        if not late or any(b["planned"] != b["rows"] for b in late):
            return "act 3: the batches after the right fix did not read all they planned"
        if not story.pauses():
            return "act 3: the deploy's pause after the fix was not recorded"
        ts, first = story.series("earliest")
        kept = [y for t, y in zip(ts, first) if t > story.fixed_at + 2]  # retention's last deletion may end then
        if not first or max(first) == 0 or not kept or max(kept) != min(kept):
            return "act 3: the log's earliest offset did not rise before the fix and stay put after it"
    if not after:
        return f"act {n}: nothing was recorded after the fix"
    return ""


def _added(story: Story, key: str, since: float) -> int:
    ts, ys = story.series(key)
    at = [y for t, y in zip(ts, ys) if t <= since]
    later = [y for t, y in zip(ts, ys) if t > since]
    return (max(later) - (at[-1] if at else 0)) if later else 0


def alt(story: Story) -> str:
    """The figure's alt text: what it shows, with the run's own numbers."""
    n, rate = story["act"], story["rate"]
    fix = story.fixed_at
    if n == 1:
        ts, lags = story.series("lag")
        before = [b["rows"] for b in story.batches() if b["t"] < fix]
        after = [b["rows"] for b in story.batches() if b["t"] > fix]
        bound = story["lag_seconds"] * rate
        under = next((t for t, y in zip(ts, lags) if t > fix and y <= bound), None)
        last = [y for t, y in zip(ts, lags) if t > (under or fix)]
        return (f"Act 1 in a recorded run. Top: the lag on the log climbs to {max(lags):,} records, past the pager's "
                f"line ({story['alert_seconds']} s of input, {story['alert_seconds'] * rate:,} records), while every "
                f"batch reads {_median(before):,} records (bottom) and the producer sends {rate} a second. After the "
                f"restart with a cap above the rate, batches read up to {max(after or [0]):,} records, the lag falls "
                f"under the graded bound ({bound:,} records) {(under or fix) - fix:.0f} s after the fix and stays "
                f"at most {max(last or [0]):,}.")
    if n == 2:
        ts, dup = story.series("duplicates")
        before = [b for b, at in story["crashes"] if at < story.in_force_at]
        after = [b for b, at in story["crashes"] if at > story.in_force_at]
        copies = max([y for t, y in zip(ts, dup) if t <= story.in_force_at] or [0])
        return (f"Act 2 in a recorded run: the rows written twice in the sink's table, over time. Each crash "
                f"(batches {', '.join(map(str, before))}: after the sink's write, before commits/N) is followed by a "
                f"step up when the batch runs again: {copies:,} copies before the fix. After the idempotent write, "
                f"batch{'es' if len(after) > 1 else ''} {', '.join(map(str, after))} crashed and ran again too, and "
                f"the count stays flat: {_added(story, 'duplicates', story.in_force_at)} copies added.")
    early = [b for b in story.batches(planned=True) if b["t"] < fix]
    late = [b for b in story.batches(planned=True) if b["t"] > fix]
    skipped = sum(b["planned"] - b["rows"] for b in early)
    pause = story.pauses()[0]
    ts, first = story.series("earliest")
    kept = [y for t, y in zip(ts, first) if t > fix + 2]
    return (f"Act 3 in a recorded run. Top: each batch's planned offsets against the rows it read; before the fix "
            f"{sum(1 for b in early if b['planned'] > b['rows'])} of {len(early)} batches read fewer rows than they "
            f"planned: retention deleted records before the query read them (the log's earliest offset rose to "
            f"{kept[0]:,} and stays there after the fix). Bottom: the records skipped without an "
            f"error, in all, climb to {skipped:,}. After the fix (retention of days, failOnDataLoss=true) the query "
            f"is stopped {pause[1] - pause[0]:.0f} s for a deploy, and every batch after the fix reads all it "
            f"planned ({sum(b['rows'] for b in late):,} records in {len(late)} batches): the total stays flat.")


def _skipped(story: Story) -> tuple[list, list]:
    """(times, records skipped so far) over act 3's batches, from 0 at the act's start to its last sample."""
    ts, ys, total = [0.0], [0], 0
    for b in story.batches(planned=True):
        total += b["planned"] - b["rows"]
        ts.append(b["t"])
        ys.append(total)
    return ts + [max(s["t"] for s in story["samples"])], ys + [total]


def _median(values: list) -> int:
    return sorted(values)[len(values) // 2] if values else 0


def draw(story: Story) -> bytes:
    """The act's chart as PNG bytes, from its recorded samples."""
    from matplotlib.figure import Figure

    from streamlab.demo.charts import PALETTE, RESTART_COLOR
    from streamlab.demo.widgets import png

    n, rate, fix = story["act"], story["rate"], story.fixed_at
    panels = 1 if n == 2 else 2
    fig = Figure(figsize=(8.4, 2.0 + 2.4 * panels))  # 840 px: about its width in JupyterLab at 1,280 px
    axes = fig.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
    end = max(s["t"] for s in story["samples"])
    if n == 1:
        ts, lags = story.series("lag")
        ax = axes[0]
        ax.plot(ts, lags, color=PALETTE[0], linewidth=2, label="lag on the log")
        ax.axhline(story["alert_seconds"] * rate, color=RESTART_COLOR, linestyle="--", linewidth=1.2,
                   label=f"the pager fires ({story['alert_seconds']} s of input)")
        ax.axhline(story["lag_seconds"] * rate, color=PALETTE[2], linestyle="--", linewidth=1.2,
                   label=f"graded bound ({story['lag_seconds']} s of input)")
        ax.set_ylim(0, 1.3 * max(lags or [1]))  # the legend at the top right, clear of the line
        ax.set_ylabel("records")
        ax.set_title("Lag on the log: the broker's latest offsets minus the query's committed position", loc="left")
        bs = story.batches()
        ax = axes[1]
        ax.bar([b["t"] for b in bs], [b["rows"] for b in bs], width=0.6, color=PALETTE[0], label="rows the batch read")
        ax.axhline(rate, color=PALETTE[1], linewidth=1.5, label=f"records sent per second ({rate})")
        ax.set_ylabel("records")
        ax.set_title("Rows each batch read (trigger: 1 s)", loc="left")
        fix_label = "a cap above the rate"
    elif n == 2:
        ax = axes[0]
        ts, dup = story.series("duplicates")
        ax.step(ts, dup, where="post", color=PALETTE[3], linewidth=2, label="rows written twice")
        for i, (batch, at) in enumerate(story["crashes"]):
            ax.axvline(at, color="#777777", linestyle=":", linewidth=1, label="a crash, then its batch again"
                       if i == 0 else None)
            ax.annotate(f"batch {batch}", (at, 1), xycoords=("data", "axes fraction"), rotation=90, va="top",
                        ha="right", fontsize=10, color="#555555")
        ax.set_ylim(0, 1.4 * max(dup or [1]))  # room for the crashes' labels above the line
        ax.set_ylabel("rows")
        ax.set_title("Copies in the sink's table (rows minus distinct records)", loc="left")
        fix_label = "the idempotent write"
    else:
        bs = story.batches(planned=True)
        ax = axes[0]
        ax.bar([b["t"] for b in bs], [b["planned"] for b in bs], width=1.6, color="#bbbbbb",
               label="offsets the batch planned")
        ax.bar([b["t"] for b in bs], [b["rows"] for b in bs], width=1.0, color=PALETTE[0], label="rows it read")
        ax.set_ylim(0, 1.45 * max([b["planned"] for b in bs] or [1]))  # the legend in two rows above the bars
        ax.set_ylabel("records")
        ax.set_title("Each batch: offsets planned against rows read (trigger: 3 s)", loc="left")
        ax = axes[1]
        ts, skipped = _skipped(story)
        ax.step(ts, skipped, where="post", color=PALETTE[3], linewidth=2, label="records skipped, in all")
        for a, b in story.pauses():
            for each in axes:
                each.axvspan(a, b, color="#f2e6c9", zorder=0, label="query stopped (a deploy)" if each is ax else None)
        ax.set_ylabel("records")
        ax.set_title("Records skipped without an error: offsets planned minus rows read, summed", loc="left")
        fix_label = "retention of days, failOnDataLoss=true"
    for i, ax in enumerate(axes):
        ax.axvline(fix, color="#333333", linewidth=1.5, label=f"the fix: {fix_label}" if i == 0 else None)
        ax.set_ylim(bottom=0)
        ax.set_xlim(0, end + 1)
        ax.title.set_fontsize(11.5)
        ax.yaxis.label.set_fontsize(11)
        ax.tick_params(labelsize=10)
        where = {1: "upper right", 2: "lower right"}.get(n, "upper left" if i == 0 else "lower right")  # clear of lines
        ax.legend(fontsize=10, loc=where, framealpha=0.9, ncol=2 if (n, i) == (3, 0) else 1)
        ax.grid(axis="y", color="#eeeeee")
    axes[0].annotate("before", (fix, 0.5), xycoords=("data", "axes fraction"), xytext=(-8, 0),
                     textcoords="offset points", ha="right", fontsize=10.5, color="#333333")
    axes[0].annotate("after", (fix, 0.5), xycoords=("data", "axes fraction"), xytext=(8, 0),
                     textcoords="offset points", ha="left", fontsize=10.5, color="#333333")
    axes[-1].set_xlabel("seconds since the act started", fontsize=11)
    fig.suptitle(f"Act {n} · {story['title']}: a recorded run", fontsize=12.5, x=0.01, ha="left")
    fig.set_layout_engine("tight")
    return png(fig, dpi=100)


# -- into the page ----------------------------------------------------------------------------------------------------
def cell_source(n: int, text: str) -> str:
    """The folded markdown cell under act n's What you should see."""
    return f"<details><summary>{SUMMARY}</summary>\n\n![{text}](figures/{FIGURE.format(n)})\n\n</details>"


def apply(executed: Path, source: Path = SOURCE) -> list[str]:
    """Draw the three acts' charts from <executed>/ONCALL-seen.json into source/figures/ and put their cells under
    the page's What you should see; the names written ([] when no run was recorded)."""
    import nbformat

    run = Path(executed) / SAMPLES
    if not run.is_file():
        return []
    recorded = json.loads(run.read_text())
    stories = {n: Story(recorded[str(n)]) for n in UNDER if str(n) in recorded}
    wrong = [why for n in UNDER for why in ([check(stories[n])] if n in stories else [f"act {n}: not recorded"])
             if why]
    if wrong:
        raise GraderError(f"{run}: {'; '.join(wrong)}: run the page again (make seen)")
    path = source / f"{PAGE}.ipynb"
    nb = nbformat.read(path, as_version=4)
    (source / PAGE_FIGURES).mkdir(exist_ok=True)
    (source / PAGE_FIGURES / SAMPLES_KEPT).write_text(json.dumps(recorded, separators=(",", ":")) + "\n")
    written = []
    for n, story in stories.items():
        (source / PAGE_FIGURES / FIGURE.format(n)).write_bytes(draw(story))
        ids = [c.get("id") for c in nb.cells]
        if UNDER[n] not in ids:
            raise GraderError(f"{path}: act {n}'s What you should see (cell {UNDER[n]}) is gone: "
                              "give grader/seen_oncall.py's UNDER its new id")
        text = cell_source(n, alt(story))
        at = ids.index(UNDER[n])
        place_below(nb, at, CELL_ID.format(n), text)
        written.append(FIGURE.format(n))
    nbformat.write(nb, path)
    return written
