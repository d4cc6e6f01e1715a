"""Builds a wheel from a directory of modules, as `pip wheel` would for a
pure-Python project: python3 make_wheel.py NAME VERSION SRC_DIR OUT_DIR
[ENTRY_POINTS_FILE]. Writes OUT_DIR/NAME-VERSION-py3-none-any.whl."""
import base64
import hashlib
import os
import sys
import zipfile

name, version, src, out = sys.argv[1:5]
entry_points = open(sys.argv[5]).read() if len(sys.argv) > 5 else None
dist = f"{name}-{version}.dist-info"
files = {}
for root, _, names in os.walk(src):
    for n in sorted(names):
        path = os.path.join(root, n)
        files[os.path.relpath(path, src)] = open(path, "rb").read()
files[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
files[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: forge-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
if entry_points:
    files[f"{dist}/entry_points.txt"] = entry_points.encode()
record = []
for path, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record.append(f"{path},sha256={digest},{len(data)}")
record.append(f"{dist}/RECORD,,")
files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(os.path.join(out, f"{name}-{version}-py3-none-any.whl"), "w") as whl:
    for path, data in files.items():
        whl.writestr(path, data)
