#!/bin/sh
# cpair.sh PORT ADDR N: one rstream latency run, server and client.
rstream -S 64 -C 1 -I $3 -T b -p $1 -b $2 >/dev/null 2>&1 &
sp=$!
sleep 1
rstream -S 64 -C 1 -I $3 -T b -p $1 -s $2
wait $sp
