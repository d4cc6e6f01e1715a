import forgecalc


def test_add():
    assert forgecalc.add(2, 3) == 5
