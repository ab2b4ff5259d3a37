"""One field registry: every surface takes its rules from ckptplan.engine.fields and refuses exactly
the values the engine refuses.

One table of good and bad values per rule runs through every surface: the engine's argument
check, the scenario record, the table validator the batch uses, the workbook reader, the Excel
functions, the workbook's data validation and its Input check condition (both evaluated by
LibreOffice), and the command line.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from openpyxl import Workbook, load_workbook
from typer.testing import CliRunner

from ckptplan import engine, files, workbook
from ckptplan.cli import app
from ckptplan.engine.gate import as_float_array
from ckptplan.engine.fields import DOMAIN_FIELDS, FIELD_BY_NAME, FIELDS, RULES, lookup
from ckptplan.engine.scenario import table_problems
from ckptplan.workbook import cells, udfs
from ckptplan.workbook import formulas as F
from ckptplan.workbook.read import WorkbookInputError, read_inputs
from ckptplan.workbook.recalc import recalculate

SEED = files.load_scenario("seed")

# rule -> (good values, bad values); finite numbers only, so that every surface (Excel too) can hold them
VALUES = {
    "positive": ([1e-9, 0.5, 3.0, 1e6], [0.0, -1e-9, -2.0]),
    "nonnegative": ([0.0, 1e-9, 2.5, 1e6], [-1e-9, -3.0]),
    "fraction": ([0.0, 0.25, 0.999999], [1.0, 1.5, -0.1]),
    "count": ([1.0, 3.0, 128.0], [0.0, 2.5, -1.0, 0.5]),
}
# a scenario field carrying each rule (no cross-field rule can refuse these values)
FIELD_OF = {"positive": "node_mtbf_h", "nonnegative": "restart_min", "fraction": "nonfatal_share",
            "count": "gpus_per_node"}
CASES = [(rule, v, good) for rule, (goods, bads) in VALUES.items()
         for good, vals in ((True, goods), (False, bads)) for v in vals]
NOT_NUMBERS = ["abc", True, None]


def _id(case):
    return f"{case[0]}-{case[1]:g}-{'good' if case[2] else 'bad'}"


def test_every_field_and_rule_is_declared_once_and_complete():
    assert len({f.name for f in FIELDS}) == len(FIELDS)
    for f in FIELDS + DOMAIN_FIELDS:
        rule = RULES[f.rule]
        assert rule.text and rule.excel and "{x}" in rule.excel and rule.validation, f.name
        assert f.option == "--" + f.name.replace("_", "-")
    for name in ("checkpoint_stall_min", "job_mtbf_min", "domain2_nodes_per_domain", "gpus", "runs", "seed"):
        assert lookup(name).rule in RULES
    with pytest.raises(KeyError):
        lookup("stall_min")  # the old alias is gone: one name per quantity


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_engine_argument_check_and_scenario_record(case):
    rule, value, good = case
    name = FIELD_OF[rule]
    if good:
        assert float(as_float_array(name, value, rule)) == value
        engine.Scenario(**{**_seed_fields(), name: int(value) if FIELD_BY_NAME[name].integer else value})
    else:
        with pytest.raises(engine.InputError, match=RULES[rule].message.replace("[", r"\[").replace(")", r"\)")):
            as_float_array(name, value, rule)
        with pytest.raises(engine.InputError) as err:
            engine.Scenario(**{**_seed_fields(), name: value})
        assert name in str(err.value) and RULES[rule].message in str(err.value)


def _seed_fields() -> dict:
    return engine.scenario_to_dict(SEED)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_table_validator_of_the_batch(case):
    rule, value, good = case
    name = FIELD_OF[rule]
    table = engine.to_table([SEED])
    table[name] = [value]
    _, _, problems = table_problems(table)
    found = problems.by_row.get(0, [])
    if good:
        assert not found
    else:
        assert [(p.field, p.rule) for p in found] == [(name, RULES[rule].message)]


@pytest.mark.parametrize("value", [*NOT_NUMBERS, math.nan, math.inf])
def test_non_numbers_are_refused_by_engine_table_and_functions(value):
    with pytest.raises(engine.InputError):
        as_float_array("restart_min", value, "nonnegative")
    table = engine.to_table([SEED]).astype(object)
    table["restart_min"] = [value]
    _, eff, problems = table_problems(table)
    if value is None or value != value:  # in a table, an empty cell (None, NaN) means "not given": the default
        assert not problems.by_row and eff["restart_min"][0] == 0.0
    else:
        assert problems.by_row[0][0].field == "restart_min"
    out = udfs.CKPT_WASTE(60, 2, 1200, [[value], [1.0]])
    if value is None:  # a blank inside a range is an error; a single blank optional cell is the default
        assert isinstance(out[0][0], str) and out[0][0].startswith("#CKPT! restart_min:")
    else:
        assert isinstance(out[0][0], str) and out[0][0].startswith("#CKPT! restart_min:"), out
    assert isinstance(out[1][0], float)


# ---- the Excel functions
UDF_CALLS = {  # rule -> a CKPT_ function with one argument of that rule, called with the value
    "positive": (lambda v: udfs.CKPT_JOB_MTBF(v, 128), "node_mtbf_h"),
    "nonnegative": (lambda v: udfs.CKPT_WASTE(60, 2, 1200, v), "restart_min"),
    "fraction": (lambda v: udfs.CKPT_JOB_MTBF_DOMAINS(2560, 128, None, None, v), "nonfatal_share"),
    "count": (lambda v: udfs.CKPT_GPU_HOURS(10, v), "gpus"),
}


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_excel_functions(case):
    rule, value, good = case
    call, name = UDF_CALLS[rule]
    out = call(value)
    if good:
        assert isinstance(out, float) and math.isfinite(out), out
    else:
        assert out == cells.error_text(name, RULES[rule].message, cells.show(value))


def test_excel_function_descriptions_come_from_the_registry():
    for name in ("checkpoint_stall_min", "async_slowdown_fraction", "nodes", "job_mtbf_min", "gpus"):
        field = lookup(name)
        assert field.label in cells.describe(name) and field.check.noun in cells.describe(name)


# ---- the workbook: reader, data validation, Input check
@pytest.fixture(scope="module")
def plan_xlsx(tmp_path_factory):
    path = tmp_path_factory.mktemp("registry") / "plan.xlsx"
    workbook.write_workbook(path, SEED)
    return path


def _input_cell(wb, name: str):
    sheet, ref = next(iter(wb.defined_names[name].destinations))
    return wb[sheet][ref.replace("$", "")]


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_workbook_reader(case, plan_xlsx, tmp_path):
    rule, value, good = case
    name = FIELD_OF[rule]
    wb = load_workbook(plan_xlsx)
    _input_cell(wb, name).value = value
    edited = tmp_path / "edited.xlsx"
    wb.save(edited)
    if good:
        base, _ = read_inputs(edited)
        assert getattr(base, name) == value
    else:
        with pytest.raises(WorkbookInputError) as err:
            read_inputs(edited)
        assert [(p[2], p[4]) for p in err.value.problems] == [(name, f"must be {RULES[rule].noun}")]


def test_workbook_reader_refuses_text_and_bools(plan_xlsx, tmp_path):
    for value in ("abc", True):
        wb = load_workbook(plan_xlsx)
        _input_cell(wb, "restart_min").value = value
        wb.save(tmp_path / "t.xlsx")
        with pytest.raises(WorkbookInputError) as err:
            read_inputs(tmp_path / "t.xlsx")
        assert err.value.problems[0][2] == "restart_min" and "not text" in err.value.problems[0][4]


def test_workbook_inputs_labels_rules_and_validation_come_from_the_registry(plan_xlsx):
    wb = load_workbook(plan_xlsx)
    ws = wb["Inputs"]
    validations = {str(r): dv for dv in ws.data_validations.dataValidation for r in dv.sqref.ranges}
    check_formula = wb["Plan"]["F3"].value
    for key, field in F.INPUTS.items():
        cell = _input_cell(wb, key)
        row = cell.row
        assert ws.cell(row=row, column=1).value == field.label
        derived = field.name in ("checkpoint_stall_min", "async_write_min", "restart_min", "downtime_min")   # derived
        optional = not field.required or derived
        assert ws.cell(row=row, column=5).value == field.check.noun + ("" if not optional else " or empty") + (
            ", empty = from the design" if derived else "")
        dv = validations[cell.coordinate]
        expected = field.check.data_validation(cell.coordinate)
        assert dv.type == expected["type"] and dv.formula1 == expected["formula1"], key
        assert dv.operator == expected.get("operator") and dv.formula2 == expected.get("formula2"), key
        assert dv.allow_blank == optional
        # the Plan's check reads the value the plan uses: stated, else derived from the design
        assert field.check.excel_condition(f"used_{key}" if derived else key) in check_formula, key


def _typed_validation_accepts(validation: dict, value: float) -> bool:
    """Excel's semantics of a typed data validation (decimal / whole with an operator)."""
    if validation["type"] == "whole" and value != int(value):
        return False
    a = float(validation["formula1"])
    b = float(validation["formula2"]) if "formula2" in validation else None
    op = validation["operator"]
    return {"greaterThan": value > a, "greaterThanOrEqual": value >= a, "lessThan": value < a,
            "lessThanOrEqual": value <= a, "between": b is not None and a <= value <= b}[op]


def test_data_validation_and_input_check_accept_exactly_the_engines_values(tmp_path):
    """LibreOffice evaluates every rule's Excel condition and custom validation formula on every
    value; typed validations are checked by their documented semantics. All must agree with the
    engine's predicate."""
    wb = Workbook()
    ws = wb.active
    rows = []
    for rule, (goods, bads) in VALUES.items():
        for value in goods + bads + ["abc"]:
            r = len(rows) + 1
            ws.cell(row=r, column=1, value=value)
            ws.cell(row=r, column=2, value=f"=IF(ISNUMBER(A{r}),{RULES[rule].excel_condition(f'A{r}')},FALSE)")
            validation = RULES[rule].data_validation(f"A{r}")
            if validation["type"] == "custom":
                ws.cell(row=r, column=3, value=f"=IFERROR({validation['formula1']},FALSE)")
            rows.append((rule, value))
    wb.save(tmp_path / "rules.xlsx")
    (out,) = recalculate([tmp_path / "rules.xlsx"], tmp_path / "out")
    got = load_workbook(out, data_only=True).active
    for r, (rule, value) in enumerate(rows, start=1):
        engine_ok = isinstance(value, float) and bool(RULES[rule].predicate(np.float64(value)))
        assert got.cell(row=r, column=2).value is engine_ok, (rule, value, "Excel condition")
        validation = RULES[rule].data_validation(f"A{r}")
        if validation["type"] == "custom":
            assert got.cell(row=r, column=3).value is engine_ok, (rule, value, "custom data validation")
        elif isinstance(value, float):
            assert _typed_validation_accepts(validation, value) is engine_ok, (rule, value, "typed data validation")


# ---- the command line
# good values the seed job can also be evaluated with (a node MTBF of 1e-9 h is valid input, but the
# job would never finish: the model says so, which is not a rule of the field)
CLI_CASES = [c for c in CASES if not c[2] or c[1] == 0 or 1e-3 <= c[1] <= 1e4]


@pytest.mark.parametrize("case", CLI_CASES, ids=_id)
def test_command_line(case):
    rule, value, good = case
    name = FIELD_OF[rule]
    field = FIELD_BY_NAME[name]
    text = str(int(value)) if field.integer and value == int(value) else repr(value)
    res = CliRunner().invoke(app, ["plan", field.option, text, "--json"], env={"COLUMNS": "200"})
    if good:
        assert res.exit_code == 0, res.output
    else:
        assert res.exit_code == 2
        if field.integer and value != int(value):  # refused by the option's type, which the registry sets
            assert field.option in res.output and "integer" in res.output
        else:
            assert f"{name}=" in res.output and RULES[rule].message in res.output


def test_every_field_is_a_command_line_option():
    res = CliRunner().invoke(app, ["plan", "--help"], env={"COLUMNS": "200"})
    for f in FIELDS:
        assert f.option in res.output, f.option
    assert pd.notna(res.output)
