// Copyright 2026 The rdmago Authors.

package timeline

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

var scriptBody = regexp.MustCompile(`(?s)<script>(.*?)</script>`)

// checkWellFormed checks page is an HTML document whose elements nest
// properly (void elements aside), with one doctype, html, head, title and
// body, and script bodies that cannot end early.
func checkWellFormed(page string) error {
	if !strings.HasPrefix(page, "<!DOCTYPE html>\n") {
		return errors.New("no <!DOCTYPE html> first")
	}
	scripts := scriptBody.FindAllStringSubmatch(page, -1)
	if len(scripts) != 1 {
		return fmt.Errorf("%d scripts, want 1", len(scripts))
	}
	page = scriptBody.ReplaceAllString(page, "<script></script>")
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	var stack []string
	seen := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("page does not parse: %v", err)
		}
		switch x := tok.(type) {
		case xml.StartElement:
			if !slices.Contains(stack, "svg") {
				seen[x.Name.Local]++
			}
			stack = append(stack, x.Name.Local)
		case xml.EndElement:
			if len(stack) == 0 || stack[len(stack)-1] != x.Name.Local {
				return fmt.Errorf("</%s> closes <%s>", x.Name.Local, strings.Join(stack, "><"))
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 {
		return fmt.Errorf("unclosed <%s>", strings.Join(stack, "><"))
	}
	for _, el := range []string{"html", "head", "title", "body", "svg"} {
		if seen[el] != 1 {
			return fmt.Errorf("%d <%s> elements, want 1", seen[el], el)
		}
	}
	return nil
}
