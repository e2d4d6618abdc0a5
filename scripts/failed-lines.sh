#!/bin/sh
# The lines of a build or test log that say what failed (cmocka's failed tests and
# their assertions, run-unit's summary, compiler errors, e2e's "not ok"), at most 20,
# wherever they are in the log: a log's tail alone may not name the failure.
#   scripts/failed-lines.sh LOG...
grep -hE '^\[  (FAILED  |ERROR   )\]|^\[   LINE   \]|^unit: FAILED|: error: |^ *not ok ' "$@" 2>/dev/null |
	head -20
exit 0
