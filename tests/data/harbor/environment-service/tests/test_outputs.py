import urllib.request
from pathlib import Path


def test_answer_is_what_the_service_serves():
    served = urllib.request.urlopen("http://127.0.0.1:8099/answer", timeout=10).read().decode().strip()
    assert Path("/app/answer.txt").read_text().strip() == served
