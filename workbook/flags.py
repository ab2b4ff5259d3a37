"""Live flag cells: a sheet says, in words, when its answer has left its model's range or is stale.

* :func:`model_check`: the engine's validity checks (:data:`ckptplan.engine.validity.CHECKS`,
  each declared once with its Excel condition) as one formula over a column's references: "OK",
  or the reasons joined by "; " exactly as :func:`ckptplan.engine.validity.warnings_text` says them.
* :func:`stale_check`: for values computed once by Python (the Monte Carlo), the inputs they were
  computed with against the live Inputs: "up to date", or "OUT OF DATE: ..." naming the inputs
  that changed since.
* :func:`highlight`: conditional formatting that paints a flag cell red unless it reads OK.
"""

from __future__ import annotations

from typing import Any, Mapping

from openpyxl.formatting.rule import FormulaRule
from openpyxl.styles import Font, PatternFill

from ..engine.errors import NEVER_FINISHES
from ..engine.validity import CHECKS

__all__ = ["INPUTS_FIRST", "NEVER_FINISHES", "OK", "UP_TO_DATE", "highlight", "inputs_first", "legend", "model_check",
           "stale_check", "tiered_model_check"]

OK = "OK"
UP_TO_DATE = "up to date"
_ALERT_FILL = PatternFill("solid", fgColor="F8CBAD")
_ALERT_FONT = Font(bold=True, color="9C0006")


def _quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def model_check(refs: Mapping[str, str], keys: bool = False, problems: str | None = None) -> str:
    """Formula (without "=") giving "OK" or the reasons of every failed validity check (``keys``:
    their short keys, for table rows; the sheet's legend gives the reasons).

    ``problems``: a formula giving the inputs' problems ("" when every input meets its rule, e.g. the
    Plan sheet's ``input_problems``). A bad input comes first: the check then names it ("check the
    inputs first: nodes must be a whole number >= 1; ...") instead of what the bad input did further
    down (an expected wall time that overflows, an error value).
    Where the sheet's own guard has given up (the expected wall time overflows once an edited
    input makes failures far more frequent than the job's steps), it says that instead, what is
    wrong and what to do: the engine refuses such a scenario with the same words
    (:data:`ckptplan.engine.errors.NEVER_FINISHES`).
    """
    joined = "&".join(f'IF({check.excel_condition(refs)},{_quote("; " + (check.key if keys else check.reason))},"")'
                      for check in CHECKS)
    body = (f'IF(NOT(ISNUMBER({refs["wall_h"]})),{_quote(NEVER_FINISHES)},'
            f'IF(({joined})="",{_quote(OK)},MID({joined},3,2000)))')
    if problems is None:
        return body
    return inputs_first(problems, body)


def tiered_model_check(refs: Mapping[str, str], block: Mapping[str, str], keys: bool = False,
                       problems: str | None = None) -> str:
    """Formula (without "=") of a tiered plan's model check, as :func:`model_check` words it: its bad inputs first
    (``problems``), then the tiered block's own check (``block["tiered_check"]``: bad tiers, an overflow, an optimum
    at the search's edge) when it fails, else "OK" or the validity checks (:data:`CHECKS`) the engine runs on a
    tiered plan (:func:`ckptplan.engine.tiers.table.checked_figures`): the first tier's interval, the tiered waste and
    failures, the first tier's stall (a stall derived from the checkpoint size is never "from a small model"); the
    checks that read a single-level figure (:data:`ckptplan.engine.tiers.table.SINGLE_LEVEL_ONLY`) do not apply.

    ``refs``: the column's references (job MTBF, work, write, GPUs); ``block``: its :func:`write_tier_block` cells.
    """
    from ..engine.tiers.table import SINGLE_LEVEL_ONLY

    stall = f'IF({block["stall_derived"]},1E+300,{block["tier1_checkpoint_stall_min"]})'
    mine = dict(refs, chosen_interval_min=block["chosen_interval_min"], waste_fraction=block["waste_fraction"],
                expected_failures=block["expected_failures"], checkpoint_stall_min=stall)
    applies = [c for c in CHECKS if not any("{" + name + "}" in c.excel for name in SINGLE_LEVEL_ONLY)]
    joined = "&".join(f'IF({check.excel_condition(mine)},{_quote("; " + (check.key if keys else check.reason))},"")'
                      for check in applies)
    tiered = block["tiered_check"]
    body = f'IF({tiered}<>{_quote(OK)},{tiered},IF(({joined})="",{_quote(OK)},MID({joined},3,2000)))'
    return body if problems is None else inputs_first(problems, body)


def inputs_first(problems: str, otherwise: str) -> str:
    """Formula (without "=") naming the bad inputs of ``problems`` (a formula giving "" when every input
    meets its rule) before anything else: "check the inputs first: nodes must be ...", or
    :data:`INPUTS_FIRST` when the problems themselves are an error value; ``otherwise`` when none."""
    return (f'IF(ISERROR({problems}),{_quote(INPUTS_FIRST)},IF(({problems})<>"",'
            f'"check the inputs first: "&({problems}),{otherwise}))')


#: a Model check whose input check itself cannot be read (an error value where an input should be)
INPUTS_FIRST = "check the inputs first: an input holds an error value"


def stale_check(pairs: list[tuple[str, str, Any]]) -> str:
    """Formula (without "=") comparing each (name, live reference, value used) pair.

    "up to date" when every live input equals the value the computation used, else
    "OUT OF DATE: inputs changed since this was computed: a, b; regenerate ...".
    """
    parts = []
    for name, live, used in pairs:
        if used is None:
            same = f'{live}=""'
        else:
            same = f"AND(ISNUMBER({live}),{live}={float(used)!r})"
        parts.append(f'IF({same},"",{_quote(name + ", ")})')
    joined = "&".join(parts)
    return (f'IF(({joined})="",{_quote(UP_TO_DATE)},"OUT OF DATE: inputs changed since this simulation: "&'
            f'LEFT({joined},LEN({joined})-2)&". Regenerate: ckptplan workbook --from THIS_FILE")')


def legend() -> list[str]:
    """One line per check: its key and its reason (for sheets whose rows show keys)."""
    return [f"{check.key}: {check.reason}" for check in CHECKS]


def highlight(ws, cells: str, ok: str = OK) -> None:
    """Paint ``cells`` (e.g. "B4" or "C9:C40") red and bold unless they read ``ok`` (or are empty)."""
    first = cells.split(":")[0].replace("$", "")
    ws.conditional_formatting.add(cells, FormulaRule(formula=[f'AND({first}<>"",{first}<>{_quote(ok)})'],
                                                     fill=_ALERT_FILL, font=_ALERT_FONT))
