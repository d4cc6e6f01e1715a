#!/bin/sh
pip install --break-system-packages --no-index -q /opt/wheels/forgecalc-1.0-py3-none-any.whl
