/*
 * flame: interactive flame graphs as self-contained SVG, in the manner of
 * Brendan Gregg's flamegraph.pl: one <g> per frame holding its <title>
 * (name, value, share), <rect> and <text> (cut to the width with ".."),
 * and an embedded script for click-to-zoom, reset and regex search with the
 * matched share. Root at the top (icicle), children sorted by name. Frames
 * narrower than MIN_WIDTH pixels are left out with their subtrees; their
 * values stay counted in their parents' widths.
 *
 * The output is bounded whatever the profile: as flamegraph.pl's --minwidth,
 * the width under which frames are left out grows (doubling from MIN_WIDTH)
 * until at most MAX_FRAMES are drawn, stacks are cut below MAX_DEPTH levels,
 * and names in titles are cut to TITLE_NAME_MAX bytes; the graph's second
 * line says what was left out. A tiny profile with one very deep recursive
 * stack therefore renders a graph of bounded size, not one of gigabytes.
 *
 * Normal graphs colour frames by package (a hash of the package name gives
 * the hue, so colours are stable across graphs); differential graphs take
 * widths from the current profile and colour by the change against the base:
 * red grew, blue shrank, shaded by the largest change. A normalized diff
 * compares each frame's share of its side's total (the current values scaled
 * to the base's total), so a frame whose share fell is blue even when the
 * current side holds more of everything.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "pprof.h"
#include "render.h"

#define WIDTH		1200
#define PAD		10
#define FRAME_H		16
#define HEAD		56		/* title, note, buttons */
#define FOOT		28		/* details line */
#define CHAR_W		6.6		/* 11px monospace */
#define BUTTON_W	100		/* px beside the note: "Reset Zoom", "Reset Search" */
#define NOTE_MIN	8.0		/* px: a note that would be smaller is cut */
#define MIN_WIDTH	0.3		/* px */
#define MAX_FRAMES	30000		/* frames drawn at most */
#define MAX_DEPTH	1024		/* levels below the root drawn at most */
#define TITLE_NAME_MAX	1024		/* bytes of a frame name in its title */
#define KERNEL_HUE	25
#define PYTHON_HUE	190	/* .. 230: Python frames (the eBPF sampler's) */

static const char script[] =
"\"use strict\";\n"
"var W=1200,PAD=10,CW=6.6,EPS=0.05,frames=[],total=0,details,matched,resetzoom,searchbtn,searching=false;\n"
"function fname(g){var t=g.querySelector('title').textContent,i=t.lastIndexOf(' (');return i<0?t:t.substring(0,i);}\n"
"function label(g,x,w){var t=g.querySelector('text'),n=Math.floor((w-6)/CW),s=fname(g);\n"
" if(n<3){if(t)t.textContent='';return;}\n"
" if(!t){t=document.createElementNS('http://www.w3.org/2000/svg','text');g.appendChild(t);}\n"
" if(s.length>n)s=s.substring(0,n-2)+'..';\n"
" t.setAttribute('x',(x+3).toFixed(2));t.setAttribute('y',(g._y+11.5).toFixed(1));t.textContent=s;}\n"
"function place(g,x,w){var r=g.querySelector('rect');r.setAttribute('x',x.toFixed(2));r.setAttribute('width',w.toFixed(2));label(g,x,w);}\n"
"function zoom(g){var x0=g._x,w0=g._w,y0=g._y,s=(W-2*PAD)/w0;\n"
" for(var i=0;i<frames.length;i++){var f=frames[i];\n"
"  if(f._y<y0&&f._x<=x0+EPS&&f._x+f._w>=x0+w0-EPS){f.style.display='';f.classList.add('parent');place(f,PAD,W-2*PAD);}\n"
"  else if(f._y>=y0&&f._x>=x0-EPS&&f._x+f._w<=x0+w0+EPS){f.style.display='';f.classList.remove('parent');place(f,PAD+(f._x-x0)*s,f._w*s);}\n"
"  else f.style.display='none';}\n"
" resetzoom.style.display='';}\n"
"function unzoom(){for(var i=0;i<frames.length;i++){var f=frames[i];f.style.display='';f.classList.remove('parent');place(f,f._x,f._w);}\n"
" resetzoom.style.display='none';}\n"
"function search(re){var r;try{r=new RegExp(re);}catch(e){matched.textContent='Bad regex: '+e.message;return -1;}\n"
" var sum=0,cur=null;\n"
" for(var i=1;i<frames.length;i++){var f=frames[i],m=r.test(fname(f));\n"
"  f.querySelector('rect').setAttribute('fill',m?'rgb(230,0,230)':f._fill);\n"
"  if(cur&&f._y>cur._y&&f._x<cur._x+cur._w-EPS)continue;\n"
"  cur=null;if(m){sum+=f._v;cur=f;}}\n"
" var pct=total>0?100*sum/total:0;matched.textContent='Matched: '+pct.toFixed(2)+'%';\n"
" matched.setAttribute('data-share',pct.toFixed(4));searching=true;searchbtn.textContent='Reset Search';return pct;}\n"
"function clearsearch(){for(var i=0;i<frames.length;i++)frames[i].querySelector('rect').setAttribute('fill',frames[i]._fill);\n"
" matched.textContent='';matched.removeAttribute('data-share');searching=false;searchbtn.textContent='Search';}\n"
"function ask(){var re=prompt('Search frames (regular expression):','');if(re)search(re);}\n"
"function init(){details=document.getElementById('details');matched=document.getElementById('matched');\n"
" resetzoom=document.getElementById('resetzoom');searchbtn=document.getElementById('search');\n"
" var box=document.getElementById('frames'),gs=box.children;\n"
" for(var i=0;i<gs.length;i++){var g=gs[i],r=g.querySelector('rect');g._x=+r.getAttribute('x');g._w=+r.getAttribute('width');\n"
"  g._y=+r.getAttribute('y');g._v=+g.getAttribute('data-v');g._fill=r.getAttribute('fill');frames.push(g);}\n"
" total=frames.length?frames[0]._v:0;\n"
" function frameof(e){var g=e.target.closest('g');return g&&g.parentNode===box?g:null;}\n"
" box.addEventListener('click',function(e){var g=frameof(e);if(g)zoom(g);});\n"
" box.addEventListener('mouseover',function(e){var g=frameof(e);if(g)details.textContent=g.querySelector('title').textContent;});\n"
" box.addEventListener('mouseout',function(){details.textContent=' ';});\n"
" resetzoom.addEventListener('click',unzoom);\n"
" searchbtn.addEventListener('click',function(){if(searching)clearsearch();else ask();});\n"
" window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.key==='f'){e.preventDefault();ask();}\n"
"  else if(e.key==='Escape'){unzoom();clearsearch();}});}\n"
"window.addEventListener('load',init);\n";

struct rgb {
	int	 r, g, b;
};

static struct rgb
hsl(double h, double s, double l)
{
	double c = (1 - fabs(2 * l - 1)) * s, hp = fmod(h, 360) / 60;
	double x = c * (1 - fabs(fmod(hp, 2) - 1)), m = l - c / 2, r = 0, g = 0, b = 0;
	struct rgb o;

	if (hp < 1) { r = c; g = x; }
	else if (hp < 2) { r = x; g = c; }
	else if (hp < 3) { g = c; b = x; }
	else if (hp < 4) { g = x; b = c; }
	else if (hp < 5) { r = x; b = c; }
	else { r = c; b = x; }
	o.r = (int)lround((r + m) * 255);
	o.g = (int)lround((g + m) * 255);
	o.b = (int)lround((b + m) * 255);
	return o;
}

/* Colour by package: hue from a hash of the name, kernel frames orange. */
static struct rgb
package_colour(const struct render_tree *t, uint32_t i)
{
	const char *name = render_tree_name(t, i);
	char pkg[256];
	uint64_t h;

	if (render_tree_is_kernel(t, i))
		return hsl(KERNEL_HUE, 0.85, 0.62);
	if (strncmp(name, "0x", 2) == 0 || strcmp(name, "[no stack]") == 0) {
		struct rgb grey = { 190, 190, 190 };
		return grey;
	}
	render_package(name, pkg, sizeof(pkg));
	h = hash_bytes(pkg, strlen(pkg));
	/* Python frames: blues and teals of their own, a shade per package. */
	if (render_tree_is_python(t, i))
		return hsl(PYTHON_HUE + (double)(h % 40), 0.55, 0.62 + (double)((h >> 24) % 12) / 100);
	/* Hues 50..350 leave the kernel's orange to the kernel. */
	return hsl(50 + (double)(h % 300), 0.45 + (double)((h >> 16) % 30) / 100,
	    0.62 + (double)((h >> 24) % 12) / 100);
}

static struct rgb
diff_colour(double delta, double maxabs)
{
	struct rgb o = { 235, 235, 235 };
	double f;
	int c;

	if (delta == 0 || maxabs == 0)
		return o;
	f = fabs(delta) / maxabs;
	/* Never darker than 110: labels in black stay readable (>= 5:1). */
	c = (int)lround(110 + 120 * (1 - (f > 1 ? 1 : f)));
	if (delta > 0) {
		o.r = 255;
		o.g = o.b = c;
	} else {
		o.r = o.g = c;
		o.b = 255;
	}
	return o;
}

/*
 * The change of node i against the base: in value, or when normalized in
 * share of its side's total (a side without samples has share 0 everywhere,
 * so against an empty base everything grew, as its share did).
 */
static double
frame_delta(const struct render_tree *t, uint32_t i, const struct flame_opts *o)
{
	if (o->normalized) {
		double d = (t->cur[0] ? (double)t->cur[i] / (double)t->cur[0] : 0) -
		    (t->base[0] ? (double)t->base[i] / (double)t->base[0] : 0);

		return fabs(d) < 1e-12 ? 0 : d;	/* equal shares by two divisions */
	}
	return (double)t->cur[i] - (double)t->base[i];
}

/* Append at most maxch characters of s (UTF-8 aware), ".." when cut, XML-escaped. */
static void
add_label(struct buf *out, const char *s, size_t maxch)
{
	size_t chars = 0, i, cut = 0, n = strlen(s);

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			chars++;
	if (chars <= maxch) {
		buf_add_xml(out, s, n);
		return;
	}
	for (i = 0, chars = 0; i < n; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (chars == maxch - 2)
				break;
			chars++;
		}
		cut = i + 1;
	}
	buf_add_xml(out, s, cut);
	buf_adds(out, "..");
}

static void
add_pct(struct buf *out, int64_t v, int64_t total)
{
	buf_add_fixed(out, total ? 100.0 * (double)v / (double)total : 0.0, 2);
	buf_addc(out, '%');
}

static void
add_title(struct buf *out, const struct render_tree *t, uint32_t i,
    const struct flame_opts *o, int64_t total)
{
	const char *name = render_tree_name(t, i);
	size_t n = strlen(name);

	if (n > TITLE_NAME_MAX) {
		/* Cut at a character boundary. */
		n = TITLE_NAME_MAX;
		while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
			n--;
		buf_add_xml(out, name, n);
		buf_adds(out, "...");
	} else
		buf_add_xml(out, name, n);
	buf_adds(out, " (");
	if (o->diff && o->normalized) {
		double b = t->base[0] ? 100.0 * (double)t->base[i] / (double)t->base[0] : 0;
		double c = total ? 100.0 * (double)t->cur[i] / (double)total : 0;

		buf_adds(out, "before ");
		render_value(out, t->base[i], o->unit);
		buf_adds(out, " = ");
		buf_add_fixed(out, b, 2);
		buf_adds(out, "%, after ");
		render_value(out, t->cur[i], o->unit);
		buf_adds(out, " = ");
		buf_add_fixed(out, c, 2);
		buf_adds(out, "%, share ");
		if (c - b >= 0)
			buf_addc(out, '+');
		buf_add_fixed(out, c - b, 2);
		buf_adds(out, " points");
	} else if (o->diff) {
		int64_t d = t->cur[i] - t->base[i];

		buf_adds(out, "before ");
		render_value(out, t->base[i], o->unit);
		buf_adds(out, ", after ");
		render_value(out, t->cur[i], o->unit);
		buf_adds(out, ", delta ");
		if (d > 0)
			buf_addc(out, '+');
		render_value(out, d, o->unit);
		if (t->base[i] != 0)
		{
			buf_adds(out, d >= 0 ? ", +" : ", ");
			buf_add_fixed(out, 100.0 * (double)d / (double)t->base[i], 2);
			buf_addc(out, '%');
		}
		else
			buf_adds(out, ", new");
		buf_adds(out, ", ");
		add_pct(out, t->cur[i], total);
		buf_adds(out, " of all");
	} else {
		render_value(out, t->cur[i], o->unit);
		buf_adds(out, ", ");
		add_pct(out, t->cur[i], total);
	}
	buf_adds(out, ")");
}

struct todo {
	uint32_t	 node;
	uint32_t	 depth;
	double		 x;
};

/*
 * The frames drawn when frames narrower than minw px are left out, and
 * whether any stack goes deeper than MAX_DEPTH. stack holds t->n entries.
 */
static size_t
count_frames(const struct render_tree *t, double scale, double minw, struct todo *stack,
    bool *deep)
{
	size_t sp = 0, n = 0;
	uint32_t k;

	stack[sp++] = (struct todo){ 0, 0, 0 };
	while (sp > 0) {
		struct todo td = stack[--sp];

		n++;
		for (k = t->kid_start[td.node]; k < t->kid_start[td.node + 1]; k++) {
			uint32_t kid = t->kids[k];

			if (t->cur[kid] <= 0 || (double)t->cur[kid] * scale < minw)
				continue;
			if (td.depth + 1 > MAX_DEPTH) {
				*deep = true;
				continue;
			}
			stack[sp++] = (struct todo){ kid, td.depth + 1, 0 };
		}
	}
	return n;
}

int
flame_render(const struct render_tree *t, const struct flame_opts *o, struct buf *out)
{
	struct buf note = { 0 };
	double minw = MIN_WIDTH;
	bool deep = false;
	size_t nframes = 0;
	struct buf fr = { 0 };
	struct todo *stack = NULL;
	size_t sp = 0, i, maxdepth = 0;
	int64_t total = t->n ? t->cur[0] : 0;
	double scale, width = WIDTH - 2 * PAD, tsize, maxabs = 0;
	size_t tlen;
	int height, rc = 0;

	if (o->diff)
		for (i = 1; i < t->n; i++) {
			double d = fabs(frame_delta(t, (uint32_t)i, o));

			if (d > maxabs && t->cur[i] > 0)
				maxabs = d;
		}
	scale = total > 0 ? width / (double)total : 0;
	if (total > 0) {
		if ((stack = malloc(t->n * sizeof(*stack))) == NULL)
			return -ENOMEM;
		/* Coarsen until the graph fits (the width limits frames per level). */
		while ((nframes = count_frames(t, scale, minw, stack, &deep)) > MAX_FRAMES &&
		    minw < width)
			minw *= 2;
		stack[sp++] = (struct todo){ 0, 0, PAD };
	}
	if (o->note)
		buf_adds(&note, o->note);
	if (minw > MIN_WIDTH)
		buf_printf(&note, "%sframes narrower than %.1f px left out (%zu drawn)",
		    note.len ? "; " : "", minw, nframes);
	if (deep)
		buf_printf(&note, "%sstacks cut below %d levels", note.len ? "; " : "",
		    MAX_DEPTH);
	if (t->truncated)
		buf_printf(&note, "%sprofile too large: frames past the tree's limits "
		    "(%d inlined lines, %d nodes) summed into one", note.len ? "; " : "",
		    RENDER_MAX_INLINE, RENDER_MAX_NODES);
	/* Depth-first, children left to right in name order. */
	while (sp > 0) {
		struct todo td = stack[--sp];
		uint32_t n = td.node, k;
		size_t base, lo, hi;
		double w = (double)t->cur[n] * scale, x, y;
		size_t maxch;
		struct rgb c;

		y = HEAD + (double)td.depth * FRAME_H;
		if (td.depth > maxdepth)
			maxdepth = td.depth;
		if (n == 0)
			c = (struct rgb){ 200, 200, 200 };
		else
			c = o->diff ? diff_colour(frame_delta(t, n, o), maxabs) :
			    package_colour(t, n);
		/* printf's float conversion would be most of the time spent here. */
		buf_adds(&fr, "<g data-v=\"");
		buf_add_i64(&fr, t->cur[n]);
		buf_adds(&fr, "\"><title>");
		add_title(&fr, t, n, o, total);
		buf_adds(&fr, "</title><rect x=\"");
		buf_add_fixed(&fr, td.x, 2);
		buf_adds(&fr, "\" y=\"");
		buf_add_fixed(&fr, y, 0);
		buf_adds(&fr, "\" width=\"");
		buf_add_fixed(&fr, w, 2);
		buf_adds(&fr, "\" height=\"");
		buf_add_i64(&fr, FRAME_H - 1);
		buf_adds(&fr, "\" fill=\"rgb(");
		buf_add_i64(&fr, c.r);
		buf_addc(&fr, ',');
		buf_add_i64(&fr, c.g);
		buf_addc(&fr, ',');
		buf_add_i64(&fr, c.b);
		buf_adds(&fr, ")\" rx=\"2\"/>");
		maxch = w > 6 ? (size_t)((w - 6) / CHAR_W) : 0;
		if (maxch >= 3) {
			buf_adds(&fr, "<text x=\"");
			buf_add_fixed(&fr, td.x + 3, 2);
			buf_adds(&fr, "\" y=\"");
			buf_add_fixed(&fr, y + 11.5, 1);
			buf_adds(&fr, "\">");
			add_label(&fr, render_tree_name(t, n), maxch);
			buf_adds(&fr, "</text>");
		}
		buf_adds(&fr, "</g>\n");
		/* Lay children out left to right, then reverse so the leftmost pops first. */
		x = td.x;
		base = sp;
		for (k = t->kid_start[n]; k < t->kid_start[n + 1]; k++) {
			uint32_t kid = t->kids[k];
			double kw;

			if (t->cur[kid] <= 0)
				continue;
			kw = (double)t->cur[kid] * scale;
			if (kw >= minw && td.depth + 1 <= MAX_DEPTH)
				stack[sp++] = (struct todo){ kid, td.depth + 1, x };
			x += kw;
		}
		for (lo = base, hi = sp; hi > lo + 1; lo++, hi--) {
			struct todo tmp = stack[lo];

			stack[lo] = stack[hi - 1];
			stack[hi - 1] = tmp;
		}
		if ((rc = buf_error(&fr)) < 0)
			goto out;
	}
	height = HEAD + (int)(maxdepth + 1) * FRAME_H + FOOT;
	buf_printf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
	    "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	    "xmlns=\"http://www.w3.org/2000/svg\">\n", WIDTH, height, WIDTH, height);
	buf_adds(out, "<style type=\"text/css\"><![CDATA[\n"
	    "text { font-family: monospace; font-size: 11px; fill: #000; }\n"
	    "#frames g { cursor: pointer; }\n"
	    "#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	    "#frames g.parent rect { opacity: 0.6; }\n"
	    ".title { font-size: 16px; text-anchor: middle; }\n"
	    ".note { font-size: 12px; text-anchor: middle; fill: #555; }\n"
	    ".button { font-size: 12px; cursor: pointer; fill: #225; }\n"
	    ".button:hover { text-decoration: underline; }\n"
	    "]]></style>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	buf_adds(out, script);
	/* A long title (a diff names both ranges) shrinks to fit the width. */
	tlen = strlen(o->title);
	tsize = tlen * 16 * 0.6 > WIDTH - 2 * PAD ? (WIDTH - 2 * PAD) / (tlen * 0.6) : 16;
	buf_printf(out, "]]></script>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
	    "fill=\"#f8f8f4\"/>\n<text class=\"title\" x=\"%d\" y=\"22\" "
	    "style=\"font-size:%.1fpx\">", WIDTH, height, WIDTH / 2, tsize);
	buf_add_xml(out, o->title, strlen(o->title));
	if (total <= 0)
		buf_adds(&note, note.len ? "; nothing to show" : "nothing to show");
	/*
	 * The note sits between the buttons: a long one (a diff's, naming
	 * its base) shrinks to fit, and below NOTE_MIN is cut, whole in its
	 * tooltip.
	 */
	{
		double room = WIDTH - 2 * (PAD + BUTTON_W), nsize = 12;
		size_t keep = note.len;

		if (note.len * 12 * 0.6 > room)
			nsize = room / (note.len * 0.6);
		if (nsize < NOTE_MIN) {
			nsize = NOTE_MIN;
			keep = (size_t)(room / (NOTE_MIN * 0.6)) - 3;
			while (keep > 0 && ((unsigned char)note.data[keep] & 0xc0) == 0x80)
				keep--;		/* not inside a UTF-8 sequence */
		}
		buf_printf(out, "</text>\n<text class=\"note\" x=\"%d\" y=\"40\" "
		    "style=\"font-size:%.1fpx\">", WIDTH / 2, nsize);
		if (keep < note.len) {
			buf_adds(out, "<title>");
			buf_add_xml(out, note.data, note.len);
			buf_adds(out, "</title>");
		}
		if (keep)
			buf_add_xml(out, note.data, keep);
		if (keep < note.len)
			buf_adds(out, "...");
	}
	buf_printf(out, "</text>\n<text id=\"resetzoom\" class=\"button\" x=\"%d\" y=\"40\" "
	    "style=\"display:none\">Reset Zoom</text>\n"
	    "<text id=\"search\" class=\"button\" x=\"%d\" y=\"40\" text-anchor=\"end\">Search</text>\n"
	    "<g id=\"frames\">\n", PAD, WIDTH - PAD);
	buf_add(out, fr.data ? fr.data : "", fr.len);
	buf_printf(out, "</g>\n<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
	    "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"></text>\n</svg>\n",
	    PAD, height - 10, WIDTH - PAD, height - 10);
	/* A failed append leaves a cut SVG: report it, never serve it as whole. */
	rc = buf_error(out);
	if (rc == 0 && out->data == NULL)
		rc = -ENOMEM;
out:
	free(stack);
	buf_free(&fr);
	buf_free(&note);
	return rc;
}
