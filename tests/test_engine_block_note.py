"""The Compare sheet's engine blocks say which view they solve, in a sentence a planner can read."""

from __future__ import annotations

from ckptplan import files
from ckptplan.workbook.engine_block import view_note


def test_the_view_note_names_what_it_leaves_out_in_plain_words():
    seed = files.load_scenario("seed")
    assert view_note(seed) == "Solved on the Compare sheet's view: on-demand capacity at a constant failure rate."
    both = seed.replace(failure_phases=[{"start_h": 0, "rate_factor": 3}, {"start_h": 72, "rate_factor": 1}],
                        preemptions_per_h=0.05, preemption_notice_min=2.0)
    text = view_note(both)
    assert ("This scenario's spot preemptions (preemptions_per_h; the Spot sheet plans them) and failure phases (the "
            "Schedule sheet plans them) are left out of these answers") in text
    assert "'s its" not in text
