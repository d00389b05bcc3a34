// Copyright 2026 The rdmago Authors.

// Package cliflag holds what the rdmago commands share about their command
// lines.
package cliflag

import "flag"

// ParseInterleaved parses fs's flags wherever they stand among the
// positional arguments (package flag stops at the first positional one;
// this resumes after it) and returns the positional arguments in order.
// "--" ends the flags: everything after it is positional.
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
