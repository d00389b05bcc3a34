#!/bin/sh
# uprobes.sh BINARY: name and file offset of the functions on a Go
# rsocket end's path from a completion event to its next send, for
# ftrace.sh's uprobes (INV_UPROBES names the file). Run on the host, where
# go tool nm is:
#   sh docs/bench/rsocket-sched-2026-11-28/uprobes.sh out/inv/rsocket.test > out/inv/uprobes.txt
bin=$1
base=$(readelf -lW "$bin" | awk '$1 == "LOAD" && $2 == "0x000000" {print $3; exit}')
go tool nm "$bin" | while read addr kind name; do
	case $name in
	github.com/rdmago/rdmago/uverbs.newEventFile.func1) p=tryread ;;
	'github.com/rdmago/rdmago/rsocket.(*Conn).progressLocked') p=progress ;;
	'github.com/rdmago/rdmago/rsocket.(*Conn).Write') p=write ;;
	'github.com/rdmago/rdmago/rsocket.(*Conn).Read') p=read ;;
	'github.com/rdmago/rdmago/uverbs.(*QP).PostSend') p=postsend ;;
	*) continue ;;
	esac
	printf '%s 0x%x\n' $p $((0x$addr - base))
done
