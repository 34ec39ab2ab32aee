#!/bin/sh
# fuzz-targets.sh: every native fuzz target of the repository, one per
# line as ./package/:FuzzName, read from the source (the _test.go files git
# tracks), so that make fuzz fuzzes a target added or moved without an edit.
set -eu
cd "$(dirname "$0")/.."
git grep -n -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' -- '*_test.go' |
	sed -E 's#^(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*#./\1/:\2#' | sort
