package transfer

import (
	"github.com/rdmago/rdmago/internal/sys"
)

// umask is the process's file mode creation mask (022 where it cannot be
// read), which the receiver applies to the sender's mode.
func umask() uint32 {
	m, _ := sys.Umask()
	return uint32(m)
}

// renameNoReplace is renameat2(RENAME_NOREPLACE) in the directory dirfd
// (Receiver.rename replaces it in tests).
func renameNoReplace(dirfd int, from, to string) error { return sys.RenameNoReplace(dirfd, from, to) }
