#!/usr/bin/env bash
# Checks that README.md shows the example programs exactly as they are in examples/: every fenced
# block whose first line is `// examples/PATH: ...` must equal the file examples/PATH, and each of
# examples/hello.cpp and examples/readme/*.cpp must be shown. Exit status 1 names each mismatch.
#
#   tools/check_readme_examples.sh [SOURCE_DIR]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
cd "$root"
blocks=$(mktemp -d)
trap 'rm -rf "$blocks"' EXIT

# Writes each such block to $blocks/<n>, and its path to $blocks/<n>.path.
awk -v out="$blocks" '
  /^```/ && !inside { inside = 1; n++; first = 1; next }
  /^```/ && inside { inside = 0; next }
  inside {
    if (first && match($0, /^\/\/ examples\/[^:]+:/)) {
      keep[n] = 1
      path = substr($0, 4, RLENGTH - 4)
      print path > (out "/" n ".path")
    }
    if (keep[n]) print > (out "/" n)
    first = 0
  }
' README.md

status=0
shown=" "
for path_file in "$blocks"/*.path; do
  [[ -e $path_file ]] || break
  path=$(cat "$path_file")
  block=${path_file%.path}
  shown+="$path "
  if [[ ! -f $path ]]; then
    echo "README.md shows $path, which does not exist" >&2
    status=1
  elif ! diff -u "$path" "$block" > "$blocks/diff"; then
    echo "README.md's block of $path differs from the file (- file, + README):" >&2
    cat "$blocks/diff" >&2
    status=1
  fi
done
for path in examples/hello.cpp examples/readme/*.cpp; do
  if [[ $shown != *" $path "* ]]; then
    echo "README.md does not show $path (a fenced block starting with '// $path: ...')" >&2
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "README.md shows every example as it is in examples/"
exit $status
