"""A planner's messy CSV through ``ckptplan batch``, read back with pandas from every output format.

What the planner typed stays visible where it belongs: a number column stays numeric in CSV, XLSX and
Parquet (a cell holding ``2 min`` is blank there and quoted in the row's ``error``), a blank required
cell is called blank (or filled from the template the planner named), ``nan`` is refused as a scenario
file refuses it, and Parquet's dictionary / extension / decimal / large-string columns read as plain ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ckptplan.cli import app

MESSY = (
    "name,nodes,checkpoint_stall_min,useful_training_h,restart_min,writers\n"
    "as planned, 128 ,2,720,NA,\n"            # NA: the default restart; padded nodes
    "typed a unit,256,2 min,720,10,\n"       # text in a number column
    "forgot the run length,64,\"1.5\",,10,\n"  # blank required cell; a quoted number
    "small,32,0.5,100,10,\n"
    "not a number,16,1,100,10,nan\n"          # nan in an optional setup column
)
NUMERIC = ("nodes", "checkpoint_stall_min", "useful_training_h", "restart_min", "writers", "total_cost",
           "waste_fraction", "job_mtbf_h")


def _read(path):
    if path.suffix == ".csv":
        return pd.read_csv(path)
    if path.suffix == ".xlsx":
        return pd.read_excel(path, sheet_name="Results")
    return pd.read_parquet(path)


def _batch(tmp_path, suffix, *extra):
    src = tmp_path / "plans.csv"
    src.write_text(MESSY)
    out = tmp_path / f"out{suffix}"
    res = CliRunner().invoke(app, ["batch", str(src), "-o", str(out), *extra], env={"COLUMNS": "160"})
    assert res.exit_code == 3, res.output  # written, some rows failed
    return res, _read(out)


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet"])
def test_messy_csv_keeps_numeric_columns_numeric_and_errors_in_their_column(tmp_path, suffix):
    res, back = _batch(tmp_path, suffix)
    for c in NUMERIC:
        assert back[c].dtype.kind in "iuf", (suffix, c, back[c].dtype)
    assert back["status"].tolist() == ["ok", "error", "error", "ok", "error"]
    errors = back["error"].fillna("").tolist()
    assert errors[0] == "" and errors[3] == ""
    assert errors[1] == "checkpoint_stall_min='2 min': must be a number"
    assert errors[2] == "useful_training_h: blank: is required"
    assert errors[4] == "writers='nan': must be a number"
    assert np.isnan(back["checkpoint_stall_min"][1]) and back["checkpoint_stall_min"][2] == 1.5
    assert back["nodes"].tolist() == [128, 256, 64, 32, 16]
    assert "None" not in res.output and "useful_training_h: blank: is required" in res.output


@pytest.mark.parametrize("suffix", [".csv", ".xlsx", ".parquet"])
def test_a_named_template_fills_blank_required_cells(tmp_path, suffix):
    res, back = _batch(tmp_path, suffix, "-t", "seed")
    assert back["status"].tolist() == ["ok", "error", "ok", "ok", "error"]
    assert back["useful_training_h"][2] == 720.0  # the seed's run length
    assert "blank cells filled from it: useful_training_h=720 (1 row(s))" in res.output
    for c in NUMERIC:
        assert back[c].dtype.kind in "iuf", (suffix, c)


def test_parquet_dictionary_nested_decimal_and_large_string_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "name": pa.array(["a", "b", "c"], type=pa.large_string()),
        "currency": pa.array(["EUR", "USD", "EUR"]).dictionary_encode(),
        "nodes": pa.array([128, 256, 64], type=pa.int16()).dictionary_encode(),
        "checkpoint_stall_min": pa.array(["2", "x", None]).dictionary_encode(),
        "useful_training_h": pa.array([720, 720, 720], type=pa.decimal128(6, 1)),
        "restart_min": pa.array([10.0, 10.0, float("nan")]),
        "gpus_per_node": pa.array([[8], [8], [8]], type=pa.large_list(pa.int64())),
    })
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / "out.parquet"
    res = CliRunner().invoke(app, ["batch", str(tmp_path / "in.parquet"), "-o", str(out)], env={"COLUMNS": "160"})
    assert res.exit_code == 3, res.output
    assert "Traceback" not in res.output
    back = pd.read_parquet(out)
    assert back["status"].tolist() == ["error", "error", "error"]
    assert back["currency"].tolist() == ["EUR", "USD", "EUR"]
    assert back["error"][0] == "gpus_per_node='[8]': must be a number"  # a nested cell, as its text
    assert back["error"][1] == "checkpoint_stall_min='x': must be a number; gpus_per_node='[8]': must be a number"
    assert "restart_min='NaN': must be a number" in back["error"][2]  # a NaN is no blank
    assert "checkpoint_stall_min: blank: is required" in back["error"][2]
    for c in ("nodes", "checkpoint_stall_min", "useful_training_h", "restart_min", "gpus_per_node"):
        assert back[c].dtype.kind in "iuf", c
