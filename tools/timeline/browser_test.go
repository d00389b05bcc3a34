// Copyright 2026 The rdmago Authors.

package timeline

import (
	"cmp"
	"context"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmago/rdmago/internal/labtest"
)

// chromium finds the browser: Debian's chromium package, which
// scripts/deps.sh installs. Without it the test fails, unless
// RDMAGO_NO_BROWSER is set (then it skips, saying so). Inside the lab it is
// the host's, run chrooted in /host (labtest.HostTool); a missing one fails.
func chromium(t *testing.T) browser {
	t.Helper()
	if labtest.InLab() {
		return func(ctx context.Context, args ...string) *exec.Cmd {
			c := labtest.HostTool(t, ctx, "chromium", args...)
			if c.Env != nil {
				c.Env = append(c.Env, "HOME=/tmp")
			}
			return c
		}
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return func(ctx context.Context, args ...string) *exec.Cmd { return exec.CommandContext(ctx, p, args...) }
		}
	}
	if os.Getenv("RDMAGO_NO_BROWSER") != "" {
		t.Skip("RDMAGO_NO_BROWSER is set and there is no chromium")
	}
	t.Fatal("no chromium in PATH: scripts/deps.sh installs Debian's chromium package (set RDMAGO_NO_BROWSER=1 to skip this test)")
	return nil
}

// browser makes a command running Chromium with args.
type browser func(ctx context.Context, args ...string) *exec.Cmd

// browserPath is where the browser sees file name: inside the lab it runs
// chrooted in the host root, which the guest has at /host.
func browserPath(name string) string {
	abs, err := filepath.Abs(name)
	if err != nil {
		abs = name
	}
	if labtest.InLab() {
		if rest, ok := strings.CutPrefix(abs, "/host/"); ok {
			return "/" + rest
		}
	}
	return abs
}

// runChromium runs headless Chromium on page with a fresh profile, adding
// args; it returns what it printed on stdout.
func runChromium(t *testing.T, bin browser, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + browserPath(t.TempDir()), "--window-size=1400,1000", "--virtual-time-budget=3000"}, args...)
	all = append(all, "file://"+browserPath(page))
	cmd := bin(ctx, all...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

var (
	itemTag  = regexp.MustCompile(`<g class="item [^"]*"[^>]*>`)
	laneTag  = regexp.MustCompile(`<g class="lane[^"]*"[^>]*>`)
	titleTag = regexp.MustCompile(`<span [^>]*data-lane="[^"]*"[^>]*>([^<]*)</span>`)
	attr     = regexp.MustCompile(`data-([a-z0-9]+)="([^"]*)"`)
)

// attrs are the data- attributes of a tag.
func attrs(tag string) map[string]string {
	a := map[string]string{}
	for _, kv := range attr.FindAllStringSubmatch(tag, -1) {
		a[kv[1]] = html.UnescapeString(kv[2])
	}
	return a
}

// laneRank is where a lane belongs from left to right: node 0's processes,
// its kernel, the wire, then each further node's kernel and processes.
func laneRank(l Lane) int {
	switch {
	case l.Kind == LaneWire:
		return 2
	case l.Node == 0 && l.Kind == LaneProcess:
		return 0
	case l.Node == 0:
		return 1
	case l.Kind == LaneKernel:
		return 2*l.Node + 1
	}
	return 2*l.Node + 2
}

// TestBrowser opens the page of the synthetic recordings in headless
// Chromium: the DOM it reports back must have every call, event and packet
// of the recordings drawn (its anchor laid out by the browser) in its lane,
// in time order; the screenshot must not be blank.
func TestBrowser(t *testing.T) {
	labtest.OneNode(t, "it draws synthetic recordings; nothing goes on the wire")
	bin := chromium(t)
	dir := t.TempDir()
	files := writeSynthetic(t, dir)
	m, err := Load(files)
	if err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "page.html")
	if err := WriteFile(page, m); err != nil {
		t.Fatal(err)
	}
	checkInBrowser(t, bin, page, m)
}

// checkInBrowser opens page, drawn from m, in the browser: every lane of m
// must be drawn in its place from left to right under its title, every item
// of m in its lane in time order (a packet's arrow ending in its receiver's
// lane), and a screenshot of it must not be blank. One run of the browser
// gives both the DOM and the screenshot: under the lab's emulation each
// start of Chromium costs tens of seconds.
func checkInBrowser(t *testing.T, bin browser, page string, m *Model) {
	shot := filepath.Join(t.TempDir(), "shot.png")
	dom := string(runChromium(t, bin, page, "--dump-dom", "--screenshot="+browserPath(shot), "--hide-scrollbars"))
	if !strings.Contains(dom, `data-drawn="`+strconv.Itoa(len(m.Items))+`"`) {
		i := strings.Index(dom, "<body")
		t.Errorf("the page's script did not report %d items drawn with a size: %.200s", len(m.Items), dom[max(i, 0):])
	}
	laneX := checkLanes(t, dom, m)
	tags := itemTag.FindAllString(dom, -1)
	if len(tags) != len(m.Items) {
		t.Fatalf("%d items in the DOM, %d in the model", len(tags), len(m.Items))
	}
	packets, calls := 0, 0
	lastT, lastY := int64(-1), -1.0
	for i, tag := range tags {
		a := attrs(tag)
		tt, _ := strconv.ParseInt(a["t"], 10, 64)
		rx, err1 := strconv.ParseFloat(a["rx"], 64)
		ry, err2 := strconv.ParseFloat(a["ry"], 64)
		if err1 != nil || err2 != nil {
			t.Errorf("item %d (%s) has no rendered position: %s", i, a["label"], tag)
			continue
		}
		x, ok := laneX[a["lane"]]
		if !ok {
			t.Errorf("item %d (%s) in unknown lane %q", i, a["label"], a["lane"])
		}
		if d := rx - x; d < -2 || d > 2 {
			t.Errorf("item %d (%s) drawn at x=%.1f, its lane %s at %.1f", i, a["label"], rx, a["lane"], x)
		}
		if tt < lastT || ry < lastY {
			t.Errorf("item %d (%s) at t=%d y=%.1f comes after t=%d y=%.1f", i, a["label"], tt, ry, lastT, lastY)
		}
		lastT, lastY = tt, ry
		switch a["kind"] {
		case ItemPacket:
			packets++
		case ItemRun:
			n, _ := strconv.Atoi(a["count"])
			packets += n
		case ItemCall, ItemEvent:
			calls++
		}
		if a["kind"] == ItemPacket || a["kind"] == ItemRun {
			x2, ok := laneX[a["to"]]
			rx2, err := strconv.ParseFloat(a["rx2"], 64)
			switch {
			case !ok:
				t.Errorf("packet %d (%s) goes to unknown lane %q", i, a["label"], a["to"])
			case err != nil:
				t.Errorf("packet %d (%s) has no rendered arrow: %s", i, a["label"], tag)
			case a["to"] != a["lane"] && (rx2-x2 < -3 || rx2-x2 > 3):
				t.Errorf("packet %d (%s) to %s: its arrow ends at x=%.1f, that lane is at %.1f", i, a["label"], a["to"], rx2, x2)
			}
		}
	}
	if packets != m.Packets || calls != m.Calls {
		t.Errorf("the DOM shows %d packets and %d calls/events, the recordings have %d and %d", packets, calls, m.Packets, m.Calls)
	}

	checkNotBlank(t, shot)
}

// checkLanes checks the lanes as the browser drew them: each of m's lanes
// once, in its place from left to right (laneRank), the lanes apart, each
// under its title; it returns where each lane's line was drawn.
func checkLanes(t *testing.T, dom string, m *Model) map[string]float64 {
	t.Helper()
	lanes := map[string]Lane{}
	for _, l := range m.Lanes {
		lanes[l.ID] = l
	}
	laneX := map[string]float64{}
	var drawn []Lane
	for _, tag := range laneTag.FindAllString(dom, -1) {
		a := attrs(tag)
		l, ok := lanes[a["lane"]]
		x, err := strconv.ParseFloat(a["rx"], 64)
		if !ok || err != nil {
			t.Fatalf("lane %q not in the model or not drawn: %s", a["lane"], tag)
		}
		l.X, laneX[l.ID] = x, x
		drawn = append(drawn, l)
	}
	if len(laneX) != len(m.Lanes) || len(drawn) != len(m.Lanes) {
		t.Fatalf("%d lanes drawn, %d in the model", len(drawn), len(m.Lanes))
	}
	slices.SortFunc(drawn, func(a, b Lane) int { return cmp.Compare(a.X, b.X) })
	for i := 1; i < len(drawn); i++ {
		a, b := drawn[i-1], drawn[i]
		if laneRank(a) > laneRank(b) || b.X-a.X < 100 {
			t.Errorf("lane %q (%s, node %d) drawn at x=%.1f, left of %q (%s, node %d) at x=%.1f", a.Title, a.Kind, a.Node, a.X, b.Title, b.Kind, b.Node, b.X)
		}
	}
	titles := titleTag.FindAllStringSubmatch(dom, -1)
	if len(titles) != len(m.Lanes) {
		t.Errorf("%d lane titles drawn, %d lanes", len(titles), len(m.Lanes))
	}
	for _, ti := range titles {
		a := attrs(ti[0])
		x, err := strconv.ParseFloat(a["rx"], 64)
		l := lanes[a["lane"]]
		if text := html.UnescapeString(ti[1]); err != nil || text != l.Title || x-laneX[l.ID] < -2 || x-laneX[l.ID] > 2 {
			t.Errorf("lane title %q drawn at x=%.1f: want %q over its lane at %.1f", text, x, l.Title, laneX[l.ID])
		}
	}
	return laneX
}

// checkNotBlank fails unless the PNG has a fair share of non-white pixels
// in several colours.
func checkNotBlank(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	colours := map[[3]uint32]bool{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
			if len(colours) < 1000 {
				colours[[3]uint32{r >> 12, g >> 12, bl >> 12}] = true
			}
		}
	}
	total := (b.Dx() / 2) * (b.Dy() / 2)
	t.Logf("screenshot %v: %d of %d sampled pixels inked, %d colours", b.Size(), ink, total, len(colours))
	if b.Dx() < 800 || ink*100 < total || len(colours) < 8 {
		t.Errorf("screenshot looks blank: %v, %d of %d pixels inked, %d colours", b.Size(), ink, total, len(colours))
	}
}
