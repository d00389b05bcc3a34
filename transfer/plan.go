package transfer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/rdmago/rdmago/internal/rdcp"
)

// Item is one thing to send: a regular file or a directory (created, with
// its mode, before what it contains).
type Item struct {
	Path    string // local path
	Name    string // name at the receiver: relative, '/'-separated (Plan checks it)
	Kind    Kind
	Size    int64
	Mode    fs.FileMode
	ModTime time.Time

	// follow: Path was named by the caller and may be a symbolic link;
	// otherwise the sender opens it with O_NOFOLLOW. planned, when set, is
	// the file Plan found: the sender sends only that file.
	follow  bool
	planned fs.FileInfo
}

// Plan lists what sending paths means: each path arrives at the receiver
// under its base name; a directory brings everything under it (directories
// first, then their contents, in lexical order). Paths named on the command
// line are followed if they are symbolic links; inside directories symbolic
// links, devices, sockets and pipes are skipped and listed in skipped. Names
// that are not safe to send, and two paths that would arrive under the same
// name, are errors.
func Plan(paths ...string) (items []Item, skipped []string, err error) {
	seen := map[string]string{}
	add := func(it Item) error {
		if err := rdcp.CheckName(it.Name); err != nil {
			return fmt.Errorf("cannot send %s: %v", it.Path, err)
		}
		if prev, ok := seen[it.Name]; ok {
			return fmt.Errorf("%s and %s would both arrive as %s: send them separately", prev, it.Path, it.Name)
		}
		seen[it.Name] = it.Path
		items = append(items, it)
		return nil
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot send %s: %w", p, err)
		}
		base := filepath.Base(abs)
		if base == string(filepath.Separator) {
			return nil, nil, fmt.Errorf("cannot send %s: it has no name to arrive under", p)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot send %s: %w", p, err)
		}
		switch {
		case fi.Mode().IsRegular():
			if err := add(Item{Path: p, Name: base, Kind: KindFile, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime(), follow: true, planned: fi}); err != nil {
				return nil, nil, err
			}
		case fi.IsDir():
			if p, err = filepath.EvalSymlinks(p); err != nil { // follow a named link
				return nil, nil, fmt.Errorf("cannot send %s: %w", p, err)
			}
			err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
				if err != nil {
					return fmt.Errorf("cannot send %s: %w", q, err)
				}
				rel, err := filepath.Rel(p, q)
				if err != nil {
					return err
				}
				name := base
				if rel != "." {
					name = base + "/" + filepath.ToSlash(rel)
				}
				switch {
				case d.IsDir():
					fi, err := os.Stat(q)
					if err != nil {
						return fmt.Errorf("cannot send %s: %w", q, err)
					}
					return add(Item{Path: q, Name: name, Kind: KindDir, Mode: fi.Mode(), ModTime: fi.ModTime()})
				case d.Type().IsRegular():
					fi, err := d.Info()
					if err != nil {
						return fmt.Errorf("cannot send %s: %w", q, err)
					}
					return add(Item{Path: q, Name: name, Kind: KindFile, Size: fi.Size(), Mode: fi.Mode(), ModTime: fi.ModTime(), planned: fi})
				default:
					skipped = append(skipped, fmt.Sprintf("%s (%v)", q, typeName(d.Type())))
					return nil
				}
			})
			if err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("cannot send %s: a %s, not a file or directory", p, typeName(fi.Mode().Type()))
		}
	}
	return items, skipped, nil
}

func typeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	}
	return m.String()
}

// Kind is what an Item (or a FileResult) is.
type Kind uint8

// Kinds.
const (
	KindFile Kind = 1 // a regular file, data follows
	KindDir  Kind = 2 // a directory, no data
)

func (k Kind) String() string { return rdcp.Kind(k).String() }
