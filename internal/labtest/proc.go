// Copyright 2026 The rdmago Authors.

package labtest

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// StatusKB reads one "kB" field of /proc/self/status (VmPin: pinned memory,
// VmHWM: peak RSS, ...), for the lab's leak and memory checks. A field the
// kernel does not report is an error, never 0.
func StatusKB(field string) (int, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			f := bytes.Fields(v)
			if len(f) == 0 {
				break
			}
			return strconv.Atoi(string(f[0]))
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

// OwnThread reports whether pid is one of this process's threads. The
// kernel reports an RDMA object's pid (rdma res, restrack) as the thread
// that created it, and Go creates objects from several threads, so a test
// finds its own objects under its threads' ids, not os.Getpid().
func OwnThread(pid uint32) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d", pid))
	return pid != 0 && err == nil
}
