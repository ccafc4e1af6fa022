#!/usr/bin/env bash
# Checks that the files docs/architecture.md names exist: every `code span` that looks like a
# source path (ends in .h, .cpp, .md, .sh or /) must be a file or folder of the tree, either as
# written (from the top) or, for a bare name such as `send.cpp`, as the last part of exactly the
# paths git knows. Exit status 1 names each path that is gone, so a move or a rename that leaves
# the route of a message or a snapshot describing files that no longer exist fails the suite.
#
#   tools/check_doc_paths.sh [SOURCE_DIR] [DOC...]
set -euo pipefail
root=${1:-$(dirname "$0")/..}
shift || true
cd "$root"
docs=("$@")
[[ ${#docs[@]} -eq 0 ]] && docs=(docs/architecture.md)
files=$(git ls-files 2>/dev/null || find . -type f | sed 's|^\./||')
status=0
for doc in "${docs[@]}"; do
  while IFS= read -r span; do
    path=${span%%,*}
    path=${path%% *}
    [[ $path =~ \.(h|cpp|md|sh)$|/$ ]] || continue
    [[ $path == *'<'* || $path == *'*'* || $path == *'{'* ]] && continue
    path=${path#../}
    [[ $path == .* ]] && continue  # an extension alone
    if [[ -e $path ]]; then continue; fi
    if [[ $path != */* ]] && grep -qE "(^|/)${path//./\\.}\$" <<<"$files"; then continue; fi
    # A path relative to a folder named earlier on the line (`io/tcp.cpp` after runtime/src/...),
    # or a folder named by its last part (`messaging/`).
    if grep -qE "/${path//./\\.}\$" <<<"$files"; then continue; fi
    if [[ $path == */ ]] && grep -qE "(^|/)${path//./\\.}" <<<"$files"; then continue; fi
    echo "$doc: \`$span\` names no file of the tree" >&2
    status=1
  done < <(grep -o '`[^`]*`' "$doc" | tr -d '`')
done
exit $status
