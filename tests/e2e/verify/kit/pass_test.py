def test_answer():
    pass
