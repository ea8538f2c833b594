"""Learning moves only near-repeats: a new task is ranked as zero-shot ranks it.

Measured on tasks that never repeat, the old signals re-ranked everything: any
logged task above a cosine of 0.4 voted, and the learned text field gave its
full bonus to a tool that shared one word ("time") with the task. Now only a
logged task at ``min_similarity`` (0.8, fitted on the training data) votes,
the text field adds only to tools such a task voted for, and its bonus is
scaled by how much of the task the tool's words cover.
"""

from __future__ import annotations

import numpy as np

from cartograph.eval.data import EvalQuery, GoldTool
from cartograph.eval.learning import _novel
from cartograph.learning.learner import Learner, LearningParams


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_attack_one_shared_word_moves_nothing_for_a_new_task() -> None:
    learner = Learner(3, LearningParams(text_weight=1.0))
    learner.add(1, unit(1, 0, 0), "what time is it in tokyo", ("time", "get_current_time"))
    unrelated = unit(0, 1, 0)  # cosine 0 to the logged task
    assert learner.scores(unrelated, "how much time does the backup take") == {}


def test_a_similar_but_different_task_below_the_threshold_does_not_vote() -> None:
    learner = Learner(3)
    learner.add(1, unit(1, 0, 0), "convert 5 usd to eur", ("fx", "convert"))
    near = unit(1, 0.9, 0)  # cosine about 0.74: related, not a repeat
    assert learner.scores(near, "convert 5 miles to km") == {}


def test_a_near_repeat_votes_and_its_tools_words_add_to_it() -> None:
    learner = Learner(3, LearningParams(text_weight=1.0))
    learner.add(1, unit(1, 0, 0), "convert 5 usd to eur", ("fx", "convert"))
    repeat = unit(1, 0.1, 0)  # cosine about 0.995
    scores = learner.scores(repeat, "convert 7 usd to eur")
    votes_only = Learner(3, LearningParams(text_weight=0.0))
    votes_only.add(1, unit(1, 0, 0), "convert 5 usd to eur", ("fx", "convert"))
    assert scores[("fx", "convert")] > votes_only.scores(repeat, "x")[("fx", "convert")] > 0


def test_the_text_bonus_is_scaled_by_how_much_of_the_task_it_covers() -> None:
    learner = Learner(3, LearningParams(text_weight=1.0, vote_weight=0.0))
    vector = unit(1, 0, 0)
    learner.add(1, vector, "read the release notes", ("docs", "read"))
    learner.add(2, vector, "compare two spreadsheets", ("sheets", "diff"))
    full = learner.scores(vector, "read the release notes")[("docs", "read")]
    one_word = learner.scores(vector, "read my eight word task about something else")
    assert full == 1.0
    assert one_word[("docs", "read")] < 0.25


def test_a_task_is_new_when_no_earlier_task_had_its_gold_set() -> None:
    def query(n: int, *tools: str) -> EvalQuery:
        gold = tuple(GoldTool(server="s", tool=t) for t in tools)
        return EvalQuery(id=str(n), query=f"task {n}", gold=gold)

    order = [query(1, "a"), query(2, "b"), query(3, "a"), query(4, "a", "b"), query(5, "b")]
    assert _novel(order) == [True, True, False, True, False]
