"""The evaluator behind the cached values: Excel's rules, checked against LibreOffice on the same cells."""

from __future__ import annotations

import math

from openpyxl import Workbook, load_workbook

from ckptplan.workbook.evaluate import cached_values
from ckptplan.workbook.recalc import recalculate

FORMULAS = {
    "B1": "=-2^2",                 # unary minus binds tighter than ^ in Excel
    "B2": "=2^3^2",                # left to right: 64
    "B3": "=1&2",                  # numbers concatenate as text
    "B4": '=IF(A9="","blank","not")',  # an empty cell equals ""
    "B5": '="b">"a"',
    "B6": '=5>"a"',                # numbers sort below text
    "B7": '=MID("abcdef",2,3)&LEFT("xyz",2)&LEN("four")',
    "B8": "=LN(0)",                # an Excel error: left uncached
    "B9": "=$A$1*A2+A9",           # a blank cell is 0 in arithmetic
    "B10": "=IF(AND(A1>1,NOT(A2>5)),MAX(A1,A2,7),MIN(A1,A2))",
    "B11": "=CEILING(A2/A1,1)+INT(-2.5)",
    "B12": "=EXP(LN(A1))+SQRT(A2)",
    "B13": '=IF(ISNUMBER(A3),"number",IF(ISNUMBER(A1),"yes","no"))',
    "B14": "=NORMSINV(0.975)+NORMSDIST(1)",
    "B15": "=(A1+A2)/(A1-2)",       # division by zero: left uncached
    "B16": "=B9*2",                # chains of formulas
    "B17": '="x"&0.25&"; "&1234.5',   # (Excel and LibreOffice differ on exponents and TRUE in text)
}


def test_evaluator_matches_libreoffice(tmp_path):
    wb = Workbook()
    ws = wb.active
    ws["A1"], ws["A2"], ws["A3"] = 2.0, 9.0, "text"
    for cell, formula in FORMULAS.items():
        ws[cell] = formula
    values = cached_values(wb)[ws.title]
    wb.save(tmp_path / "f.xlsx")
    (out,) = recalculate([tmp_path / "f.xlsx"], tmp_path / "out")
    lo = load_workbook(out, data_only=True).active
    assert values["B1"] == 4.0 and values["B2"] == 64.0 and values["B3"] == "12" and values["B4"] == "blank"
    assert "B8" not in values and "B15" not in values
    for cell in FORMULAS:
        if cell not in values:
            assert lo[cell].value in ("#NUM!", "#DIV/0!", "#VALUE!"), (cell, lo[cell].value)
            continue
        mine, theirs = values[cell], lo[cell].value
        if isinstance(mine, float):
            assert math.isclose(mine, theirs, rel_tol=1e-12), (cell, mine, theirs)
        else:
            assert mine == theirs, (cell, mine, theirs)
