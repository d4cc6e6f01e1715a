#!/bin/sh
sed -n 's/.*`\(skill-word-[0-9]*\)`.*/\1/p' /skills/release-notes/SKILL.md > /work/answer.txt
