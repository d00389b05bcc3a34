// Copyright 2026 The rdmago Authors.

package transfer

// oNoFollow is 0 on Windows, which has no O_NOFOLLOW: there os.Root opens
// every path with O_NOFOLLOW_ANY, refusing symbolic links in any component.
const oNoFollow = 0

// isLoop is false on Windows (no O_NOFOLLOW).
func isLoop(error) bool { return false }
