#!/bin/sh
# Instructions per operation of the data path's host benchmarks, counted by
# valgrind's callgrind (apt-get install valgrind): each benchmark run at two
# iteration counts, the difference of the whole process's counts divided by
# the difference in iterations, so start-up and set-up cancel. Under the
# lab's instruction clock (rdmalab --icount) a guest's time is its
# instruction count, so these counts are what a change saves there; the
# host's nanoseconds hide most of it (a superscalar core runs the extra
# instructions of a call or a check almost for free).
#   sh scripts/ir.sh [REV]   (REV: a git revision to count
#   instead of the working tree, e.g. the commit before a change)
set -e
cd "$(dirname "$0")/.."
command -v valgrind > /dev/null || { echo "ir.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
src=.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [ "$src" = . ] || git worktree remove --force "$src"' EXIT
if [ -n "$1" ]; then
	src=$tmp/src
	git worktree add -q --detach "$src" "$1"
fi
(cd "$src" && go test -c -o "$tmp/uverbs.test" ./uverbs && go test -c -o "$tmp/rsocket.test" ./rsocket)
# count BIN BENCH N: the Ir callgrind collects for N iterations of BENCH.
count() {
	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$1" -test.run '^$' -test.bench "^Benchmark$2\$" -test.benchtime "${3}x" 2>&1 |
		awk '/Collected/ {gsub(",", "", $4); print $4}'
}
per() { # BIN BENCH LO HI
	if ! "$1" -test.list "^Benchmark${2%%/*}\$" | grep -q .; then
		echo "$2: not in this revision"
		return
	fi
	lo=$(count "$1" "$2" "$3")
	hi=$(count "$1" "$2" "$4")
	echo "$2: $(( (hi - lo) / ($4 - $3) )) instructions per operation ($3 and $4 iterations: $lo, $hi)"
}
per "$tmp/uverbs.test" 'PostPoll$/^list1' 100000 200000
per "$tmp/rsocket.test" FakeWriteRead 50000 100000
