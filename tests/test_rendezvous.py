"""helpers.rendezvous: does a schedule of sends and receives finish when every send waits for its receiver?"""

import pytest

from helpers.rendezvous import first_deadlock, send_after_compute


def test_a_matched_exchange_completes_and_a_crossed_one_hangs():
    assert first_deadlock([[("send", 1, "a"), ("recv", 1, "b")], [("recv", 0, "a"), ("send", 0, "b")]]) is None
    crossed = [[("send", 1, "a"), ("recv", 1, "b")], [("send", 0, "b"), ("recv", 0, "a")]]
    assert first_deadlock(crossed) == [("send", 1, "a"), ("send", 0, "b")]


def test_a_send_met_by_the_wrong_receive_is_named():
    with pytest.raises(ValueError, match="rank 0 sends a while rank 1 expects b"):
        first_deadlock([[("send", 1, "a")], [("recv", 0, "b")]])


def test_tags_that_went_through_json_still_match():
    assert first_deadlock([[("send", 1, ("act", 0))], [["recv", 0, ["act", 0]]]]) is None


def test_the_naive_order_of_1f1b_hangs_and_gpipe_does_not():
    gpipe = [[("F", 0), ("F", 1), ("B", 0), ("B", 1)]] * 2
    one_f_one_b = [[("F", 0), ("F", 1), ("B", 0), ("B", 1)], [("F", 0), ("B", 0), ("F", 1), ("B", 1)]]
    assert first_deadlock(send_after_compute(gpipe)) is None
    assert first_deadlock(send_after_compute(one_f_one_b)) == [("send", 1, ("act", 1)), ("send", 0, ("grad", 0))]
    assert send_after_compute([[("F", 0), ("B", 0)]]) == [[]], "one stage sends nothing"
