package transfer

// Hooks for the external tests (package transfer_test), which use
// transfer/transfertest and so cannot be in package transfer.

// ParallelHashMin is the smallest slot the receiver hashes in a second
// goroutine.
const ParallelHashMin = parallelHashMin

// SetWriteFault makes r run f before each write into a partial file; an
// error f returns is the write's.
func SetWriteFault(r *Receiver, f func(name string, off int64, n int) error) { r.writeFault = f }
