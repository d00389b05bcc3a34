// Copyright 2026 The rdmago Authors.

package cm_test

import (
	"errors"
	"fmt"

	"github.com/rdmago/rdmago/cm"
)

// Events print as their C names.
func ExampleEventType() {
	fmt.Println(cm.EventEstablished)
	fmt.Println(cm.EventRejected)
	// Output:
	// RDMA_CM_EVENT_ESTABLISHED
	// RDMA_CM_EVENT_REJECTED
}

// A Dial that found no listener wraps ErrNoListener; Options.WaitForListener
// makes Dial retry until its context ends instead.
func ExampleErrNoListener() {
	err := fmt.Errorf("cm: dial 192.0.2.1:18515: %w", cm.ErrNoListener)
	if errors.Is(err, cm.ErrNoListener) {
		fmt.Println("nobody listens yet: retry, or Dial with &cm.Options{WaitForListener: true}")
	}
	// Output: nobody listens yet: retry, or Dial with &cm.Options{WaitForListener: true}
}
