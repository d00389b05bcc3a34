#!/bin/sh
# ../rsocket-icount-6.1-2026-11-28/rtwork.sh at 1,000 and at 5,000 round trips
# in one boot, so that rtwork-diff.py can subtract the samples and leave the
# set-up out. Binaries and command as for rtwork.sh (the Go one: out/inv/rsocket.test).
#   flock /tmp/lab.lock go run ./cmd/rdmalab run --icount --kernel 6.1 -- sh docs/bench/rsocket-quiet-2026-11-28/rtwork-diff.sh > out/inv/rtwork-diff.log
#   python3 docs/bench/rsocket-quiet-2026-11-28/rtwork-diff.py out/inv/rtwork-diff.log
for I in 1000 5000; do
	echo "##### I=$I"
	INV_ITERS=$I sh docs/bench/rsocket-icount-6.1-2026-11-28/rtwork.sh
done
