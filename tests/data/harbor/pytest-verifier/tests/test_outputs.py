from pathlib import Path


def test_answer():
    assert Path("/app/answer.txt").read_text().strip() == "42"
