// Copyright 2026 The rdmago Authors.

package timeline

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/rdmago/rdmago/tools/trace"
)

// WriteFile writes m's page to name.
func WriteFile(name string, m *Model) error {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	w := bufio.NewWriter(f)
	if err := WriteHTML(w, m); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("timeline: write %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("timeline: write %s: %w", name, err)
	}
	return nil
}

const pageStyle = `body{font:13px system-ui,sans-serif;margin:0;color:#222;background:#fff}
header{padding:8px 14px;border-bottom:1px solid #ccc;background:#f7f7f7}
header h1{font-size:17px;margin:0 0 4px}
header p{margin:2px 0}
#zoom button{margin-right:4px}
#wrap{position:relative;overflow:auto;height:calc(100vh - 150px)}
#lanes{position:sticky;top:0;z-index:2;height:34px;background:#fffe;border-bottom:1px solid #ddd}
#lanes span{position:absolute;top:4px;transform:translateX(-50%);font-weight:600;font-size:12px;text-align:center;white-space:nowrap}
#detail{position:fixed;right:10px;top:10px;max-width:460px;max-height:80vh;overflow:auto;background:#fff;border:1px solid #888;
box-shadow:0 2px 8px #0004;padding:8px;display:none;z-index:3;font:12px ui-monospace,monospace}
#detail table{border-collapse:collapse}#detail td{padding:1px 6px;vertical-align:top;word-break:break-all}
.lane line{stroke:#bbb;stroke-dasharray:4 4}.lane.wire line{stroke:#999;stroke-dasharray:none;stroke-width:1}
.axis text{font-size:10px;fill:#888}.gap line{stroke:#ddd;stroke-dasharray:2 6}.gap text{font-size:10px;fill:#999;font-style:italic}
.item text{font-size:11px;fill:#222}.item{cursor:pointer}
.item.call .anchor{fill:#2a6fdb}.item.idle .anchor{fill:#bbb}.item.idle text{fill:#999}.item.event .anchor{fill:#8a4fd0}.item.note .anchor{fill:#999}
.item.qpstate .anchor{fill:#0a8f55}.item.qpstate text{fill:#0a6f45;font-weight:600}
.item.mr .anchor{fill:#d9822b}.item.mr text{fill:#a55b10;font-weight:600}
.item.packet line,.item.run line{stroke:#555;stroke-width:1.2}.item.run line.band{stroke:#8fb3e8;stroke-width:7;opacity:.6}
.item.packet .anchor,.item.run .anchor{fill:#555}
.item.cm line{stroke:#8a4fd0}.item.cm text{fill:#6a2fb0;font-weight:600}
.item.rkey line{stroke:#d9822b}.item.rkey text{fill:#a55b10}
.item.nak line{stroke:#d22;stroke-width:2}.item.nak text{fill:#c00;font-weight:700}
.item.err .anchor{fill:#d22}.item.err text{fill:#c00;font-weight:700}
.item.error .anchor{fill:#d22}
.item .span{stroke:#2a6fdb;stroke-width:4;opacity:.3}.item.wc .anchor{fill:#0a8f55}.item.wc text{fill:#0a6f45}
.item:hover text{text-decoration:underline}.item.hl text{background:#ff0;fill:#000;font-weight:700}.item.hl .anchor{stroke:#000;stroke-width:2}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:3px;vertical-align:middle}`

// pageScript makes the page interactive: click shows every field, MR and
// rkey highlighting, zoom; and on load it records where the browser drew
// things, in the SVG's coordinates, so that a test can read the layout back
// from the DOM: data-rx, data-ry on each item (the centre of its anchor),
// lane (the centre of its line) and lane title; data-rx2 on a packet or run
// (the far end of its arrow); data-drawn on the body (the items whose anchor
// has a size).
const pageScript = `(function(){
var svg=document.getElementById('tl'),det=document.getElementById('detail'),z=1;
function fields(g){try{return JSON.parse(g.getAttribute('data-fields'))}catch(e){return[]}}
function show(g){var f=fields(g),h='<b>'+esc(g.getAttribute('data-label'))+'</b><table>';
for(var i=0;i<f.length;i++)h+='<tr><td>'+esc(f[i][0])+'</td><td>'+esc(f[i][1])+'</td></tr>';
det.innerHTML=h+'</table><p><small>click elsewhere to close</small></p>';det.style.display='block';
var hl=document.querySelectorAll('.item.hl');for(i=0;i<hl.length;i++)hl[i].classList.remove('hl');
var k=g.getAttribute('data-rkey');if(k){var s=document.querySelectorAll('.item[data-rkey="'+k+'"]');for(i=0;i<s.length;i++)s[i].classList.add('hl')}}
function esc(s){return String(s).replace(/[&<>"]/g,function(c){return{'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;'}[c]})}
document.addEventListener('click',function(ev){var g=ev.target.closest&&ev.target.closest('.item');if(g)show(g);else if(!det.contains(ev.target))det.style.display='none'});
function zoom(f){z=f?Math.min(8,Math.max(0.25,z*f)):1;document.getElementById('scaled').style.zoom=z;document.getElementById('zl').textContent=Math.round(z*100)+'%'}
document.getElementById('zin').onclick=function(){zoom(1.5)};document.getElementById('zout').onclick=function(){zoom(1/1.5)};document.getElementById('z1').onclick=function(){zoom(0)};
var ctm=svg.getScreenCTM().inverse(),n=0;
function pos(x,y){var p=svg.createSVGPoint();p.x=x;p.y=y;return p.matrixTransform(ctm)}
function mark(g,el){var r=el.getBoundingClientRect(),p=pos(r.left+r.width/2,r.top+r.height/2);
g.setAttribute('data-rx',p.x.toFixed(1));g.setAttribute('data-ry',p.y.toFixed(1));return r}
var ls=document.querySelectorAll('.lane');for(var i=0;i<ls.length;i++)mark(ls[i],ls[i].querySelector('line'));
ls=document.querySelectorAll('#lanes span');for(i=0;i<ls.length;i++)mark(ls[i],ls[i]);
var items=svg.querySelectorAll('.item');
for(i=0;i<items.length;i++){var a=items[i].querySelector('.anchor');if(!a)continue;var r=mark(items[i],a);if(r.width>0&&r.height>0)n++;
var l=items[i].querySelector('line:not(.band)');if(!l)continue;var b=l.getBoundingClientRect(),cx=r.left+r.width/2;
items[i].setAttribute('data-rx2',pos(Math.abs(b.left-cx)>Math.abs(b.right-cx)?b.left:b.right,0).x.toFixed(1))}
document.body.setAttribute('data-drawn',String(n));
})();`

// WriteHTML writes m as one self-contained HTML page.
func WriteHTML(w io.Writer, m *Model) error {
	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(m.Title), pageStyle)
	fmt.Fprintf(&b, "<header><h1>%s</h1>\n", esc(m.Title))
	fmt.Fprintf(&b, "<p>%d packets, %d calls and CM events. Time runs down; the space between rows grows with the logarithm of the time between them, so a 10 ms handshake and a 1 s transfer both stay readable (the time since the start is on the left). Long runs of one packet type are drawn as one band. Hover or click anything for every decoded field; click an MR or an rkey to light up where that key travels.</p>\n", m.Packets, m.Calls)
	fmt.Fprintf(&b, "<p id=\"clock\"><b>Clocks:</b> %s</p>\n", esc(m.Clock))
	for _, n := range m.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(n))
	}
	b.WriteString(`<p class="legend"><span><i style="background:#2a6fdb"></i>call</span><span><i style="background:#0a8f55"></i>QP state change</span><span><i style="background:#d9822b"></i>MR registration / rkey</span><span><i style="background:#8a4fd0"></i>CM event</span><span><i style="background:#555"></i>packet</span><span><i style="background:#0a8f55;border-radius:2px"></i>completion</span><span><i style="background:#2a6fdb;opacity:.3;border-radius:0;width:4px"></i>call that waited, start to return</span><span><i style="background:#bbb"></i>normal outcome (flushed at teardown, size probe, no event yet)</span><span><i style="background:#d22"></i>error, NAK</span>`)
	b.WriteString(`<span id="zoom">zoom <button id="zout" type="button">−</button><button id="z1" type="button">1:1</button><button id="zin" type="button">+</button> <span id="zl">100%</span></span></p>` + "\n</header>\n")
	b.WriteString("<div id=\"wrap\"><div id=\"scaled\">\n<div id=\"lanes\" style=\"width:" + px(m.Width) + "px\">")
	for _, l := range m.Lanes {
		fmt.Fprintf(&b, "<span style=\"left:%spx\" data-lane=\"%s\">%s</span>", px(l.X), esc(l.ID), esc(l.Title))
	}
	b.WriteString("</div>\n")
	fmt.Fprintf(&b, "<svg id=\"tl\" width=\"%s\" height=\"%s\" viewBox=\"0 0 %s %s\">\n",
		px(m.Width), px(m.Height), px(m.Width), px(m.Height))
	b.WriteString("<defs><marker id=\"arr\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" fill=\"#555\"/></marker>" +
		"<marker id=\"arrnak\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" fill=\"#d22\"/></marker></defs>\n")
	laneX := map[string]float64{}
	for _, l := range m.Lanes {
		laneX[l.ID] = l.X
		cls := "lane"
		if l.Kind == LaneWire {
			cls += " wire"
		}
		fmt.Fprintf(&b, "<g class=\"%s\" data-lane=\"%s\" data-x=\"%s\"><line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/></g>\n",
			cls, esc(l.ID), px(l.X), px(l.X), px(topMargin-20), px(l.X), px(m.Height))
	}
	// The time axis and the gaps.
	b.WriteString("<g class=\"axis\">")
	lastLabel := -1e9
	for i, it := range m.Items {
		if i > 0 {
			dt := it.T - m.Items[i-1].T
			if dt >= 2_000_000 {
				gy := (m.Items[i-1].Y + it.Y) / 2
				fmt.Fprintf(&b, "<g class=\"gap\"><line x1=\"0\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/><text x=\"4\" y=\"%s\">… %s …</text></g>",
					px(gy), px(m.Width), px(gy), px(gy-3), trace.FormatDuration(uint64(dt)))
			}
		}
		if it.Y-lastLabel >= rowHeight {
			fmt.Fprintf(&b, "<text x=\"4\" y=\"%s\">%s</text>", px(it.Y+4), ms(it.T))
			lastLabel = it.Y
		}
	}
	b.WriteString("</g>\n")
	for i, it := range m.Items {
		writeItem(&b, i, it, laneX)
	}
	b.WriteString("</svg></div></div>\n<div id=\"detail\"></div>\n<script>" + pageScript + "</script>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("timeline: write page: %w", err)
	}
	return nil
}

func writeItem(b *strings.Builder, i int, it Item, laneX map[string]float64) {
	esc := html.EscapeString
	fj, _ := json.Marshal(it.Fields)
	cls := strings.Join(append([]string{"item", it.Kind}, it.Class...), " ")
	fmt.Fprintf(b, "<g class=\"%s\" id=\"i%d\" data-kind=\"%s\" data-lane=\"%s\" data-t=\"%d\" data-y=\"%s\" data-label=\"%s\" data-fields=\"%s\"",
		cls, i, it.Kind, esc(it.Lane), it.T, px(it.Y), esc(it.Label), esc(string(fj)))
	if it.To != "" {
		fmt.Fprintf(b, " data-to=\"%s\" data-t2=\"%d\" data-seen=\"%s\"", esc(it.To), it.T2, it.Seen)
	}
	if it.T0 != 0 {
		fmt.Fprintf(b, " data-t0=\"%d\" data-y0=\"%s\"", it.T0, px(it.Y0))
	}
	if it.Count > 0 {
		fmt.Fprintf(b, " data-count=\"%d\"", it.Count)
	}
	if it.RKey != "" {
		fmt.Fprintf(b, " data-rkey=\"%s\"", esc(it.RKey))
	}
	b.WriteString(">")
	var tip strings.Builder
	tip.WriteString(it.Label)
	for _, f := range it.Fields {
		tip.WriteString("\n" + f[0] + ": " + f[1])
	}
	fmt.Fprintf(b, "<title>%s</title>", esc(tip.String()))
	x := laneX[it.Lane]
	switch it.Kind {
	case ItemPacket, ItemRun:
		x2 := laneX[it.To]
		if it.To == it.Lane {
			x2 = x + 60
		}
		marker := "arr"
		if strings.Contains(strings.Join(it.Class, " "), "nak") {
			marker = "arrnak"
		}
		if it.Kind == ItemRun {
			fmt.Fprintf(b, "<line class=\"band\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", px(x), px(it.Y), px(x2), px(it.Y2))
		}
		fmt.Fprintf(b, "<line x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\" marker-end=\"url(#%s)\"", px(x), px(it.Y), px(x2), px(it.Y2), marker)
		if it.Seen != "both" {
			b.WriteString(" stroke-dasharray=\"5 3\"")
		}
		b.WriteString("/>")
		fmt.Fprintf(b, "<circle class=\"anchor\" cx=\"%s\" cy=\"%s\" r=\"3\"/>", px(x), px(it.Y))
		// Labels sit halfway along the arrow; a run of acknowledgements
		// crosses the run it answers there, so its label sits a quarter of
		// the way from its sender instead.
		f := 0.5
		if it.Kind == ItemRun && strings.HasPrefix(it.Label, "Acknowledge") {
			f = 0.25
		}
		tx, ty := x+f*(x2-x), it.Y+f*(it.Y2-it.Y)-4
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\" text-anchor=\"middle\">%s</text>", px(tx), px(ty), esc(short(it.Label, 68)))
	case ItemEvent:
		fmt.Fprintf(b, "<path class=\"anchor\" d=\"M%s %sl5 5l-5 5l-5 -5z\"/>", px(x), px(it.Y-5))
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\">%s</text>", px(x+8), px(it.Y+4), esc(short(it.Label, 34)))
	case ItemError:
		fmt.Fprintf(b, "<rect class=\"anchor\" x=\"%s\" y=\"%s\" width=\"10\" height=\"10\" transform=\"rotate(45 %s %s)\"/>", px(x-5), px(it.Y-5), px(x), px(it.Y))
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\">%s</text>", px(x+9), px(it.Y+4), esc(short(it.Label, 48)))
	case ItemNote:
		fmt.Fprintf(b, "<rect class=\"anchor\" x=\"%s\" y=\"%s\" width=\"8\" height=\"8\"/>", px(x-4), px(it.Y-4))
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\">%s</text>", px(x+8), px(it.Y+4), esc(short(it.Label, 34)))
	case ItemCompletion:
		fmt.Fprintf(b, "<rect class=\"anchor\" x=\"%s\" y=\"%s\" width=\"8\" height=\"8\" rx=\"2\"/>", px(x-4), px(it.Y-4))
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\">%s</text>", px(x+8), px(it.Y+4), esc(short(it.Label, 34)))
	default:
		if it.T0 != 0 {
			// A call that waited: a bar from its start to its return.
			fmt.Fprintf(b, "<line class=\"span\" x1=\"%s\" y1=\"%s\" x2=\"%s\" y2=\"%s\"/>", px(x-8), px(it.Y0), px(x-8), px(it.Y))
		}
		fmt.Fprintf(b, "<circle class=\"anchor\" cx=\"%s\" cy=\"%s\" r=\"4\"/>", px(x), px(it.Y))
		fmt.Fprintf(b, "<text x=\"%s\" y=\"%s\">%s</text>", px(x+8), px(it.Y+4), esc(short(it.Label, 34)))
	}
	b.WriteString("</g>\n")
}

func px(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
}

func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// ms is a time since the start for the axis.
func ms(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }
