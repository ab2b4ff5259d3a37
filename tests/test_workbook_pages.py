"""What a planner sees: the seed and storage workbooks printed to PDF by LibreOffice, read back page by page.

Every page is checked for ``###`` (a figure wider than its column) and for names of the code
(``formulas.CALCS``, ``plan_setup``, ``engine.``...) where a planner should read words; the sheet
settings behind the fixes (number formats, widths, row heights, chart axes) are read back with
openpyxl. Needs LibreOffice and pdftotext (poppler-utils); ``scripts/test.sh`` installs both. Skipped
only on a developer machine without LibreOffice, never in CI.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import tempfile

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from ckptplan import files
from ckptplan.cli import app
from ckptplan.workbook.build import scaling_nodes
from ckptplan.workbook.recalc import soffice
from ckptplan.workbook.style import LINE_HEIGHT

pytestmark = pytest.mark.skipif(soffice() is None and not os.environ.get("CI"),
                                reason="LibreOffice not installed (scripts/test.sh installs it; CI always runs this)")

TEMPLATES = ("seed", "llama3-405b-storage")
CODE_NAMES = re.compile(r"formulas\.|CALCS|plan_setup|engine\.|\b(?:setup|storage|recovery|validity)\.[A-Za-z_]"
                        r"|\(R \+ T \+ C \+ W\)/M")
FOOTER = re.compile(r"^\s*(.+?) - page \d+ of \d+\s*$")


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    """{template: (xlsx, [(sheet, page text), ...])}: the workbooks as `ckptplan workbook` writes them, printed."""
    exe, pdftotext = soffice(), shutil.which("pdftotext")
    assert exe and pdftotext, "LibreOffice and pdftotext (poppler-utils) are needed: run scripts/test.sh"
    out = tmp_path_factory.mktemp("pages")
    books = {}
    for name in TEMPLATES:
        books[name] = out / f"{name}.xlsx"
        res = CliRunner().invoke(app, ["workbook", "-t", name, "-o", str(books[name]), "--deadline-runs", "2000"])
        assert res.exit_code == 0, res.output
    with tempfile.TemporaryDirectory(prefix="ckptplan-lo-") as profile:
        subprocess.run([exe, "--headless", "--norestore", "--nolockcheck", f"-env:UserInstallation=file://{profile}",
                        "--convert-to", "pdf", "--outdir", str(out), *map(str, books.values())],
                       capture_output=True, timeout=300, env={**os.environ, "HOME": profile}, check=True)
    result = {}
    for name, xlsx in books.items():
        text = subprocess.run([pdftotext, "-layout", str(xlsx.with_suffix(".pdf")), "-"], capture_output=True,
                              text=True, check=True).stdout
        pages = []
        for page in text.split("\f"):
            lines = [line for line in page.splitlines() if line.strip()]
            if lines:
                footer = FOOTER.match(lines[-1])
                assert footer, f"{name}: a page without its footer: {lines[-1]!r}"
                pages.append((footer.group(1), page))
        result[name] = (xlsx, pages)
    return result


def _sheet_text(pages: list[tuple[str, str]], sheet: str) -> str:
    return "\n".join(text for s, text in pages if s == sheet)


@pytest.mark.parametrize("name", TEMPLATES)
def test_every_sheet_prints_and_no_page_shows_hashes(printed, name):
    xlsx, pages = printed[name]
    assert {s for s, _ in pages} == set(load_workbook(xlsx).sheetnames)
    hashes = [(sheet, line.strip()) for sheet, text in pages for line in text.splitlines() if "###" in line]
    assert not hashes, hashes


@pytest.mark.parametrize("name", TEMPLATES)
def test_pages_speak_a_planners_words(printed, name):
    _, pages = printed[name]
    code = [(sheet, m.group(0), text[max(0, m.start() - 40):m.end() + 20].strip()) for sheet, text in pages
            for m in CODE_NAMES.finditer(text)]
    assert not code, code
    plan = _sheet_text(pages, "Plan")
    assert "Can the job finish?" in plan and "<= 700" not in plan
    deadline = _sheet_text(pages, "Deadline")
    assert "Checkpoint stall seen by the training step (blocking part of a save) (min)" in deadline
    # the text of an empty answer has no unit after it (it used to read "none of the intervals trmin")
    assert not re.search(r"none of the intervals tried\s+min", deadline)


def test_scaling_columns_fit_their_largest_figure(printed):
    """At 64x the llama3 job's nodes a run costs more than 1e12 USD: shown as a number, never ###."""
    xlsx, pages = printed["llama3-405b-storage"]
    ws, values = load_workbook(xlsx)["Scaling"], load_workbook(xlsx, data_only=True)["Scaling"]  # cached figures
    rows = range(6, 6 + len(scaling_nodes(files.load_plan("llama3-405b-storage").scenario.nodes)))
    heads = {c: str(ws.cell(row=5, column=c).value) for c in range(1, ws.max_column + 1)}
    money = [c for c, h in heads.items() if h.startswith(("GPU-hours, total", "Total cost", "Cost, total"))]
    assert len(money) == 2, heads
    for col in money:
        letter = ws.cell(row=5, column=col).column_letter
        assert ws.cell(row=6, column=col).number_format.startswith("[<1000000000000]")
        figures = [values.cell(row=r, column=col).value for r in rows]
        shown = [f"{v:,.0f}" if v < 1e12 else f"{v:.2E}" for v in figures if isinstance(v, float) and math.isfinite(v)]
        assert len(shown) == len(rows) and max(figures) > 1e12, figures
        assert ws.column_dimensions[letter].width >= max(map(len, shown)) + 2, (heads[col], shown)
    assert re.search(r"\dE\+1\d", _sheet_text(pages, "Scaling"))


def test_model_checks_and_long_labels_get_rows_tall_enough(printed):
    xlsx, _ = printed["llama3-405b-storage"]
    wb = load_workbook(xlsx)
    ws = wb["Scaling"]
    flag_col = next(c for c in range(1, ws.max_column + 1) if ws.cell(row=5, column=c).value == "Model check")
    last_row = max(r for r in range(6, 40) if isinstance(ws.cell(row=r, column=1).value, int))
    # the rows past 4,096 nodes carry two checks ("high_waste; deadline_approximation"): two lines each
    assert ws.row_dimensions[last_row].height >= 2 * LINE_HEIGHT
    assert ws.cell(row=last_row, column=flag_col).alignment.wrap_text
    plan = wb["Plan"]
    long_labels = [r for r in range(5, plan.max_row + 1) if isinstance(plan.cell(row=r, column=1).value, str)
                   and len(plan.cell(row=r, column=1).value) > plan.column_dimensions["A"].width * 1.2
                   and not plan.row_dimensions[r].hidden]
    assert long_labels  # the deadline's validity label and "Can the job finish? ..."
    for r in long_labels:
        assert plan.cell(row=r, column=1).alignment.wrap_text and plan.row_dimensions[r].height >= 2 * LINE_HEIGHT
    assert plan.print_title_rows == "$4:$4"  # the headings on every printed page


def test_scaling_charts_read_at_every_node_count(printed):
    """Cost per run on a log axis (from 50 M USD to orders of magnitude more for the llama3 job: on a linear
    axis every affordable row lay flat on zero); waste as a share never above 100 %."""
    xlsx, _ = printed["llama3-405b-storage"]
    charts = load_workbook(xlsx)["Scaling"]._charts

    def text(title) -> str:
        return "".join(run.t for p in title.tx.rich.p for run in (p.r or []))

    by_title = {text(c.title): c for c in charts}
    cost = next(c for t, c in by_title.items() if t.startswith("Cost per run"))
    assert cost.y_axis.scaling.logBase == 10 and "log scale" in text(cost.y_axis.title)
    waste = next(c for t, c in by_title.items() if t.startswith("Waste"))
    assert waste.y_axis.scaling.logBase is None and (waste.y_axis.scaling.min, waste.y_axis.scaling.max) == (0, 1)


def test_the_test_finds_what_it_looks_for():
    """The footer and code-name patterns match what they must (a check that can never fail checks nothing)."""
    assert FOOTER.match("   Storage & recovery - page 9 of 14  ").group(1) == "Storage & recovery"
    for bad in ("formulas.CALCS", "engine.setup.plan_setup", "setup.plan_setup", "storage.save_times",
                "recovery.RESTART_PHASES", "Model in range: (R + T + C + W)/M <= 700"):
        assert CODE_NAMES.search(bad), bad
    for fine in ("Storage & recovery", "setup. Blue cells", "the engine's figures", "Daly 2006"):
        assert not CODE_NAMES.search(fine), fine
