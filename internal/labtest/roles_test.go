// Copyright 2026 The rdmago Authors.

package labtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunRolesRunsThisNodesSide(t *testing.T) {
	for _, c := range []struct {
		env              Env
		serves, connects bool
	}{
		{Env{Node: "0"}, true, true},
		{Env{Node: "0", TwoNodes: true}, true, false},
		{Env{Node: "1", TwoNodes: true}, false, true},
	} {
		var served, connected bool
		c.env.RunRoles(t,
			func() error { served = true; return nil },
			func() error { connected = true; return nil })
		if served != c.serves || connected != c.connects {
			t.Errorf("%+v: served %v, connected %v; want %v, %v", c.env, served, connected, c.serves, c.connects)
		}
	}
}

func TestRetry(t *testing.T) {
	notYet := errors.New("nothing listens yet")
	calls := 0
	v, err := Retry(context.Background(), func(err error) bool { return errors.Is(err, notYet) }, func() (int, error) {
		if calls++; calls < 3 {
			return 0, notYet
		}
		return 42, nil
	})
	if v != 42 || err != nil || calls != 3 {
		t.Errorf("Retry = %d, %v after %d calls; want 42, nil after 3", v, err, calls)
	}
	other := errors.New("refused")
	calls = 0
	if _, err := Retry(context.Background(), func(err error) bool { return errors.Is(err, notYet) }, func() (int, error) {
		calls++
		return 0, other
	}); err != other || calls != 1 {
		t.Errorf("Retry on an error not to retry = %v after %d calls; want it at once", err, calls)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
	defer cancel()
	if _, err := Retry(ctx, func(error) bool { return true }, func() (int, error) { return 0, notYet }); err != notYet {
		t.Errorf("Retry once ctx is done = %v; want the last error", err)
	}
}
