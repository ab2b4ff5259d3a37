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


def test_formulas_of_one_shape_keep_their_own_literals():
    """Cells whose formulas differ only in literals (numbers, text, references, names) share one parsed shape:
    each still reads its own literals, and text that looks like a reference, a number or a name stays text."""
    from openpyxl.workbook.defined_name import DefinedName

    wb = Workbook()
    ws = wb.active
    ws.title = "S"
    ws["A1"], ws["A2"], ws["A3"], ws["B1"] = 2.0, 3.0, 5.0, 7.0
    wb.defined_names["rate_1.x"] = DefinedName("rate_1.x", attr_text="S!$A$3")
    wb.defined_names["alt2_set"] = DefinedName("alt2_set", attr_text="'S'!$B$1")
    formulas = {
        "C1": "=A1*10+1.5E1",            # the same shape four times, other literals each time
        "C2": "=A2*20+2e-1",
        "C3": "=$A$3*30+.5",
        "C4": "=rate_1.x*40+alt2_set",   # names in the reference's place
        "D1": '=IF(A1>1,"A1 is ""big""","1.5")&"B1"',   # references and numbers inside text stay text
        "D2": '=IF(A1>9,"A1 is ""big""","1.5")&"x1"',
        "D3": "=IF(true,A$1,B1)+IF(FALSE,1,$B1)",       # TRUE/FALSE as names, in any case; mixed references
        "D4": "=_xlfn.NORM.S.DIST(0,TRUE)+ABS(-A2)",    # a function whose name holds dots, and one that reads a slot
        "D5": "=C1+C2+C3+C4",
    }
    for cell, formula in formulas.items():
        ws[cell] = formula
    values = cached_values(wb)["S"]
    assert values["C1"] == 35.0 and values["C2"] == 60.2 and values["C3"] == 150.5 and values["C4"] == 207.0
    assert values["D1"] == 'A1 is "big"B1' and values["D2"] == "1.5x1"
    assert values["D3"] == 9.0 and values["D4"] == 3.5 and values["D5"] == 35.0 + 60.2 + 150.5 + 207.0


def test_a_formula_that_holds_the_slot_name_is_left_uncached():
    wb = Workbook()
    ws = wb.active
    ws["A1"] = "=1.__slot__+1"   # outside a literal: unreadable, as any text there
    ws["A2"] = '="__slot__"&1'   # inside text: an ordinary string
    values = cached_values(wb)[ws.title]
    assert "A1" not in values and values["A2"] == "__slot__1"
