// Copyright 2026 The rdmago Authors.

package trace

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// parseTPFormat reads a tracefs events/<group>/<event>/format file and returns
// its fields by name (arrays under their bare name: "srcaddr").
func parseTPFormat(r io.Reader) (map[string]tpField, error) {
	fields := map[string]tpField{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var decl string
		f := tpField{Offset: -1, Size: -1}
		for _, part := range strings.Split(line, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				decl = strings.TrimSpace(v)
			case "offset", "size", "signed":
				n, err := strconv.Atoi(strings.TrimSpace(v))
				if err != nil {
					return nil, fmt.Errorf("tracepoint format line %q: %s: %w", line, k, err)
				}
				switch k {
				case "offset":
					f.Offset = n
				case "size":
					f.Size = n
				default:
					f.Signed = n != 0
				}
			}
		}
		if decl == "" || f.Offset < 0 || f.Size < 0 {
			return nil, fmt.Errorf("tracepoint format line %q: missing field, offset or size", line)
		}
		words := strings.Fields(decl)
		name := words[len(words)-1]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		name = strings.TrimLeft(name, "*")
		fields[name] = f
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read tracepoint format: %w", err)
	}
	if len(fields) == 0 {
		return nil, fmt.Errorf("tracepoint format: no fields")
	}
	return fields, nil
}

// cmEventFieldsFrom picks the cm_event_handler fields out of a parsed format.
func cmEventFieldsFrom(fields map[string]tpField) (cmEventFields, error) {
	var c cmEventFields
	var ok bool
	if c.Event, ok = fields["event"]; !ok {
		return c, fmt.Errorf("rdma_cma:cm_event_handler format has no field \"event\"")
	}
	if c.Status, ok = fields["status"]; !ok {
		return c, fmt.Errorf("rdma_cma:cm_event_handler format has no field \"status\"")
	}
	c.CMID = fields["cm_id"]
	c.Tos = fields["tos"]
	c.SrcAddr = fields["srcaddr"]
	c.DstAddr = fields["dstaddr"]
	return c, nil
}
