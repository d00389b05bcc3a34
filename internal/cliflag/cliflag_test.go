// Copyright 2026 The rdmago Authors.

package cliflag

import (
	"flag"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseInterleaved(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		pos     []string
		v       bool
		n       int
		wantErr bool
	}{
		{args: nil, pos: nil},
		{args: []string{"a", "-v", "b", "-n", "3"}, pos: []string{"a", "b"}, v: true, n: 3},
		{args: []string{"-n", "2", "a", "--", "-v", "b"}, pos: []string{"a", "-v", "b"}, n: 2},
		{args: []string{"a", "-x"}, wantErr: true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		v := fs.Bool("v", false, "")
		n := fs.Int("n", 0, "")
		pos, err := ParseInterleaved(fs, tc.args)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		if tc.wantErr {
			continue
		}
		if diff := cmp.Diff(tc.pos, pos); diff != "" || *v != tc.v || *n != tc.n {
			t.Errorf("%q: positional (-want +got) %s; -v %v, want %v; -n %d, want %d", tc.args, diff, *v, tc.v, *n, tc.n)
		}
	}
}
