// Copyright 2026 The rdmago Authors.

package uverbs

import (
	"runtime"
	"sync/atomic"
	"time"
)

// dataGate lets Close wait out the data path (PostSend, PostRecv, Poll)
// without putting a lock or an allocation on it. Each data-path call enters
// the gate (one atomic add) and leaves it (another); Close shuts the gate
// and waits until nobody is inside before it destroys the object, unmaps
// its rings or lets the Context close the descriptor the doorbell writes
// to. A call that finds the gate shut fails with ErrClosed (Poll finds
// nothing) without touching the rings.
//
// The state is one word: the high bit says shut, the rest counts the calls
// inside. Enter adds first and checks the bit after, Shut sets the bit and
// then waits for the count to drain, so in the single order of the two
// atomic operations either the call is counted before the bit is set (and
// Close waits for it) or it sees the bit (and backs out).
type dataGate struct{ v atomic.Uint32 }

const gateShut = 1 << 31

// enter reports whether the caller may use the object's rings; if so it must
// call exit when done with them.
func (g *dataGate) enter() bool {
	if g.v.Add(1)&gateShut != 0 {
		g.v.Add(^uint32(0))
		return false
	}
	return true
}

// exit leaves the gate entered with enter.
func (g *dataGate) exit() { g.v.Add(^uint32(0)) }

// shut shuts the gate and waits until no call is inside. Data-path calls
// are short (a ring write, a ring read, one doorbell write(2)), so it
// yields and then sleeps briefly rather than parking on a lock.
func (g *dataGate) shut() {
	g.v.Or(gateShut)
	for i := 0; g.v.Load()&^gateShut != 0; i++ {
		if i < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(10 * time.Microsecond)
		}
	}
}

// reopen opens the gate again (a destroy that failed left the object alive).
func (g *dataGate) reopen() { g.v.And(^uint32(gateShut)) }
