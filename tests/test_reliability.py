"""Job-level reliability: node -> job division, GPUs, correlated domains, non-fatal share."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ckptplan import engine
from ckptplan.engine import FailureDomain, InputError


def test_reference_job_mtbf():
    assert engine.job_mtbf(2560, 128) == 20.0
    assert engine.job_mtbf(2560, 256) == 10.0
    s = engine.job_mtbf(pd.Series([2560.0, 2560.0], index=["a", "b"]), np.array([128, 256]))
    assert list(s) == [20.0, 10.0] and list(s.index) == ["a", "b"]


def test_node_mtbf_from_gpus():
    # 8 GPUs at 20,480 h each: 8/20480 per h -> 2,560 h per node
    assert engine.node_mtbf_from_gpus(20480, 8) == pytest.approx(2560)
    # plus a host part failing every 10,240 h: 1/(8/20480 + 1/10240) = 2048 h
    assert engine.node_mtbf_from_gpus(20480, 8, 10240) == pytest.approx(2048)


def test_domains_add_their_own_rate():
    dom = FailureDomain("power", 20000.0, 16)
    # 256 nodes -> 16 domains; rate = 256/2560 + 16/20000 = 0.1 + 0.0008
    assert engine.job_failure_rate_per_h(2560, 256, [dom]) == pytest.approx(0.1008)
    assert engine.domains_spanned(250, 16) == 16  # packed: ceil(250/16)
    assert engine.job_mtbf_with_domains(2560, 256, [dom]) == pytest.approx(1 / 0.1008)
    assert engine.job_mtbf_with_domains(2560, 256, [(20000.0, 16)]) == pytest.approx(1 / 0.1008)


def test_nonfatal_share_applies_to_node_failures_only():
    dom = FailureDomain("rack", 10000.0, 32)
    rate = engine.job_failure_rate_per_h(2560, 128, [dom], nonfatal_share=0.25)
    assert rate == pytest.approx(0.75 * 128 / 2560 + 4 / 10000)


def test_correlated_domains_are_not_a_node_division():
    """A domain event counted per node would overstate the interruptions: the domain model counts it once."""
    per_node_counting = engine.job_mtbf(1 / (1 / 2560 + 1 / 20000), 256)
    as_domain = engine.job_mtbf_with_domains(2560, 256, [FailureDomain("power", 20000.0, 16)])
    assert as_domain > per_node_counting


def test_no_failure_possible_is_an_error():
    with pytest.raises(InputError, match="no failure can stop the job"):
        engine.job_mtbf_with_domains(np.inf, 128)


@pytest.mark.parametrize("call, field", [
    (lambda: engine.job_mtbf(0, 128), "node_mtbf"),
    (lambda: engine.job_mtbf(2560, 0), "nodes"),
    (lambda: engine.job_mtbf(2560, 12.5), "nodes"),
    (lambda: engine.job_failure_rate_per_h(2560, 128, [FailureDomain("rack", -1, 16)]), "rack.mtbf_h"),
    (lambda: engine.job_failure_rate_per_h(2560, 128, [("x",)]), "domains[0]"),
    (lambda: engine.job_failure_rate_per_h(2560, 128, nonfatal_share=1.0), "nonfatal_share"),
])
def test_bad_input(call, field):
    with pytest.raises(InputError) as info:
        call()
    assert str(info.value).startswith(field)


@settings(max_examples=200, deadline=None)
@given(m=st.floats(1, 1e7), n=st.integers(1, 2**20))
def test_job_mtbf_halves_when_nodes_double(m, n):
    assert engine.job_mtbf(m, 2 * n) == pytest.approx(engine.job_mtbf(m, n) / 2, rel=1e-14)


@settings(max_examples=200, deadline=None)
@given(m=st.floats(1, 1e7), n=st.integers(1, 100000), dm=st.floats(1, 1e9), per=st.integers(1, 4096),
       share=st.floats(0, 0.99), existing=st.lists(st.tuples(st.floats(1, 1e9), st.integers(1, 4096)), max_size=3))
def test_adding_a_domain_never_raises_job_mtbf(m, n, dm, per, share, existing):
    before = engine.job_mtbf_with_domains(m, n, existing, share)
    after = engine.job_mtbf_with_domains(m, n, existing + [(dm, per)], share)
    assert after <= before
