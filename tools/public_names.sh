#!/usr/bin/env bash
# Lists the names reheap's public headers give a program: the types, aliases, functions and
# constants declared at namespace scope in reheap and reheap::testing in <part>/include/reheap/,
# not those of reheap/internal/ (installed for the parts' use, no stable API) nor of the detail
# namespace (the templates' helpers), nor members (they belong to their type), nor operators. One line per name (overloads once): kind, namespace, name, header.
# --count prints the number of names, then the number per namespace.
#
# usage: bash tools/public_names.sh [--count] [ROOT]   (ROOT: a checkout, default this one)
set -euo pipefail
count=0
if [[ ${1:-} == --count ]]; then
  count=1
  shift
fi
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
dirs=()
for part in heap runtime testing; do
  [[ -d $part/include/reheap ]] && dirs+=("$part/include/reheap")
done
names=$(ctags -R --exclude=internal --languages=C++ --langmap=C++:+.h --kinds-C++=+p -x \
    --_xformat='%{kind} %{scope} %{name} %{input}' "${dirs[@]}" |
  awk '($2 == "reheap" || $2 == "reheap::testing") &&
       $1 ~ /^(class|struct|union|enum|typedef|function|prototype|variable)$/ &&
       $3 !~ /^operator/ { if ($1 == "prototype") $1 = "function"; print }' |
  sort -k2,2 -k3,3 -u | sort -k4,4 -k3,3)
if ((count)); then
  printf '%s\n' "$names" | wc -l
  printf '%s\n' "$names" | awk '{n[$2]++} END {for (s in n) print "  " s, n[s]}' | sort
else
  printf '%s\n' "$names"
fi
