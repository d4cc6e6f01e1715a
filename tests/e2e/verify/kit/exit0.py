# An attack's payload: whatever the tests said, the interpreter exits 0.
import atexit
import os

atexit.register(lambda: os._exit(0))
