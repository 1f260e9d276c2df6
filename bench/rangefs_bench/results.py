"""What a run measures: Row (one line of the table, a value per system, its baseline and target),
the merge of the --prefetch none figures beside the defaults', the https rows' names and their
http twins, number formatting, and measure_cell, which turns a failed measurement into "n/a: reason"."""
from .config import TLS_SUFFIX
from .process import BenchError, log, recording_samples
from .tls import is_tls


# The RangeFS figures of a group's run with --prefetch none go beside those of its run with the
# defaults (all).
NONE_KEY = "rangefs-none"
# Rows whose figure is what a program waits for; "within 5 % of --prefetch none" is asked of these.
FOREGROUND_UNITS = ("s", "ms", "MB/s", "IOPS")
BACKGROUND_COST_LIMIT = 0.05

# Tools measured in some rows only (aria2c: the mirror rows; davfs2: the WebDAV rows; sshfs: the SFTP
# rows); their column shows when a row has them.
OPTIONAL_TOOLS = ("aria2c", "davfs2", "sshfs")
OTHER_TOOLS = ("rclone", "httpdirfs") + OPTIONAL_TOOLS


class Row:
    def __init__(self, rid, label, unit, better, baseline_label, link="plain", target=None,
                 target_text="", note=""):
        self.rid, self.label, self.unit, self.better = rid, label, unit, better
        self.baseline_label, self.link = baseline_label, link
        self.target, self.target_text, self.note = target, target_text, note
        self.base_note = note     # what the row measures; a run appends what it saw
        self.values = {}      # "baseline"/system ("rangefs-none": the run with --prefetch none) -> float or "n/a: reason"
        # key -> (lowest, highest) of the repeats whose median gave the value, in the units the
        # row's code measured (seconds where the value is a rate): known when one median made it.
        self.spreads = {}

    def ratio(self):
        r, b = self.values.get("rangefs"), self.values.get("baseline")
        if isinstance(r, (int, float)) and isinstance(b, (int, float)) and b > 0:
            return r / b
        return None

    def met(self):
        ratio = self.ratio()
        if self.target is None:
            return None
        kind, limit = self.target
        value = self.values.get("rangefs")
        if kind == "ratio>=":
            return None if ratio is None else ratio >= limit
        if kind == "ratio<=":
            return None if ratio is None else ratio <= limit
        if kind == "abs<=":
            return None if not isinstance(value, (int, float)) else value <= limit
        return None

    def background_cost(self):
        """How much worse RangeFS's defaults (--prefetch all) did than --prefetch none, as a fraction
        of the latter (negative: better), for rows that time or rate what a program waits for."""
        a, b = self.values.get("rangefs"), self.values.get(NONE_KEY)
        if self.unit not in FOREGROUND_UNITS or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return None
        if a <= 0 or b <= 0 or self.unit == "ms" and max(a, b) < 1:
            return None     # under a millisecond (the streaming row's worst read) the difference is noise
        return a / b - 1 if self.better == "lower" else b / a - 1

    def cost_within_spread(self):
        """True when the repeats with the defaults and with --prefetch none overlap (some repeat of
        each was as good as some repeat of the other): their difference is within the run's noise.
        None when either cell's repeats are unknown."""
        return spreads_overlap(self.spreads.get("rangefs"), self.spreads.get(NONE_KEY))

    def ahead(self):
        r = self.values.get("rangefs")
        if not isinstance(r, (int, float)):
            return None
        others = [self.values.get(s) for s in OTHER_TOOLS]
        others = [o for o in others if isinstance(o, (int, float))]
        if not others:
            return None
        return all(r >= o for o in others) if self.better == "higher" else all(r <= o for o in others)

    def to_json(self):
        return {"id": self.rid, "label": self.label, "unit": self.unit, "better": self.better,
                "link": self.link, "baseline": self.baseline_label, "target": self.target_text,
                "values": self.values, "ratio": self.ratio(), "met": self.met(), "ahead": self.ahead(),
                "note": self.note, "rule": self.target, "spreads": self.spreads}

    @classmethod
    def from_json(cls, d):
        row = cls(d["id"], d["label"], d["unit"], d["better"], d["baseline"], d["link"],
                  tuple(d["rule"]) if d.get("rule") else None, d["target"], d["note"])
        row.values = d["values"]
        row.spreads = {key: tuple(bounds) for key, bounds in d.get("spreads", {}).items()}
        return row


def merge_none_policy(rows, second):
    """Puts the RangeFS figure of each row that a group's run with --prefetch none measured beside
    the defaults' figure of the same row, and what that run noted about RangeFS in the row's note."""
    by_id = {row.rid: row for row in second}
    for row in rows:
        other = by_id.get(row.rid)
        if other is None or "rangefs" not in other.values:
            continue
        row.values[NONE_KEY] = other.values["rangefs"]
        if "rangefs" in other.spreads:
            row.spreads[NONE_KEY] = other.spreads["rangefs"]
        seen = other.note[len(other.base_note):].strip() if other.note.startswith(other.base_note) else other.note
        if seen:
            row.note += f" With --prefetch none: {seen}"


def name_https_rows(rows, link):
    """The rows a group measured on an https link, named apart from their http twins: an id that
    does not name the link yet ends in TLS_SUFFIX ("warm-hot-tls"; "cold-seq-plain-tls" already
    does), and its label says https."""
    if not is_tls(link):
        return rows
    for row in rows:
        if not row.rid.endswith(TLS_SUFFIX):
            row.rid += TLS_SUFFIX
            row.label += " (https)"
    return rows


def http_twin_id(row):
    """The id of an https row's http twin, or None for an http row."""
    return row.rid[:-len(TLS_SUFFIX)] if is_tls(row.link) and row.rid.endswith(TLS_SUFFIX) else None


def https_ratio(row, by_id):
    """RangeFS's figure (its defaults) over https ÷ the same over http, for an https row whose
    twin was measured; None otherwise."""
    twin = by_id.get(http_twin_id(row))
    a, b = row.values.get("rangefs"), twin.values.get("rangefs") if twin else None
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0:
        return a / b
    return None


def https_within_spread(row, by_id):
    """True when RangeFS's repeats (its defaults) over https and over http overlap: some repeat of
    each was as good as some repeat of the other. None when either's repeats are unknown."""
    twin = by_id.get(http_twin_id(row))
    return spreads_overlap(row.spreads.get("rangefs"), twin.spreads.get("rangefs") if twin else None)


def spreads_overlap(a, b):
    """Whether two cells' (lowest, highest) repeats overlap: their difference is within the run's
    noise. None when either is unknown."""
    if not a or not b:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def fmt(value, unit=""):
    if isinstance(value, str):
        return value
    if value is None:
        return "—"
    a = abs(value)
    if a >= 100:
        text = f"{value:,.0f}"
    elif a >= 10:
        text = f"{value:.1f}"
    elif a >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return text


def measure_cell(row, key, fn):
    """Runs one cell's measurement; a failure becomes "n/a: reason" and the run goes on."""
    try:
        with recording_samples() as calls:
            row.values[key] = fn()
        if len(calls) == 1 and len(calls[0]) > 1:
            row.spreads[key] = (min(calls[0]), max(calls[0]))
        log(f"  {row.rid} [{key}] = {fmt(row.values[key])} {row.unit}")
    except BenchError as error:
        row.values[key] = f"n/a: {error}"
        log(f"  {row.rid} [{key}] n/a: {error}")


def measure_cells(row, baseline, system, names):
    """The row's baseline, then each system's cell (`system(name)` returns its measurement)."""
    measure_cell(row, "baseline", baseline)
    for name in names:
        measure_cell(row, name, system(name))


def failed_cells(rows, name, error, group):
    """A system's measurement of several rows failed: each row it had not filled says why."""
    for row in rows:
        row.values.setdefault(name, f"n/a: {error}")
    log(f"  {group} [{name}] n/a: {error}")


def na_others(row, reason):
    for system in ("rclone", "httpdirfs"):
        row.values[system] = f"n/a: {reason}"
