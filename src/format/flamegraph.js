/*
 * flamegraph.js - draws and drives the flame graph in the SVG that embeds it.
 * Original code for bpfprof (BSD-2-Clause OR GPL-2.0-only); compiled into
 * src/format/svg.c at build time. Keep it free of the sequence "]]" followed by
 * ">" (it is embedded in CDATA) and of any network access.
 *
 * Data (JSON in <script id="fg-data">, written by svg.c): the call tree in
 * preorder, children sorted by name, as a flat array with `stride` numbers
 * per node: label index, samples, [samples before (diff)], number of
 * children. Labels and their kinds (0 user, 1 kernel, 2 JIT, 3 other, 4 Python, 5 inlined, 6 Lisp,
 * 7 interpreted Java) are
 * separate arrays. Only frames at least MIN_PX wide at the current zoom are
 * drawn, so even a huge profile draws a few thousand elements.
 */
(function () {
	'use strict';
	var NS = 'http://www.w3.org/2000/svg';
	var MIN_PX = 0.3;
	var doc = document;
	var data = JSON.parse(doc.getElementById('fg-data').textContent);
	var W = data.width, H = data.height, FH = data.frameHeight, PAD = data.pad;
	var TOP = data.top, BOTTOM = data.bottom;
	var diff = !!data.diff, inverted = !!data.inverted;
	var names = data.labels, kinds = data.kinds, UNIT = ' ' + (data.unit || 'samples');
	var stride = diff ? 4 : 3, raw = data.nodes, n = raw.length / stride;

	/* Decoded tree: label, value, before, parent, depth, end of subtree. */
	var lab = new Int32Array(n), val = new Float64Array(n), bef = new Float64Array(n);
	var par = new Int32Array(n), dep = new Int32Array(n), end = new Int32Array(n);
	(function decode() {
		var open = [], left = [];
		for (var i = 0, o = 0; i < n; i++, o += stride) {
			var nc = raw[o + stride - 1];

			lab[i] = raw[o];
			val[i] = raw[o + 1];
			if (diff)
				bef[i] = raw[o + 2];
			while (open.length && left[left.length - 1] === 0) {
				open.pop();
				left.pop();
			}
			par[i] = open.length ? open[open.length - 1] : -1;
			if (open.length)
				left[left.length - 1]--;
			dep[i] = open.length;
			end[i] = i + 1;
			if (nc > 0) {
				open.push(i);
				left.push(nc);
			}
		}
		for (var j = n - 1; j > 0; j--)
			if (end[j] > end[par[j]])
				end[par[j]] = end[j];
	})();
	raw = data.nodes = null;

	var TOTAL = n ? val[0] : 0, TOTAL_BEFORE = n ? bef[0] : 0;
	var framesG = doc.getElementById('frames');
	var details = doc.getElementById('details');
	var matchedT = doc.getElementById('matched');
	var resetB = doc.getElementById('reset');
	var searchB = doc.getElementById('search');
	var zoom = 0, matched = null, term = '';

	function fmt(v) {
		return String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
	}

	function pct(a, b) {
		return b > 0 ? (100 * a / b).toFixed(2) + '%' : '0.00%';
	}

	function hash(s) {
		var h = 2166136261;

		for (var i = 0; i < s.length; i++) {
			h ^= s.charCodeAt(i);
			h = Math.imul(h, 16777619);
		}
		return (h >>> 0) / 4294967296;
	}

	function rgb(r, g, b) {
		return 'rgb(' + Math.round(r) + ',' + Math.round(g) + ',' + Math.round(b) + ')';
	}

	/* Colour families by frame kind; the shade comes from the name, so a
	 * function has the same colour in every graph. */
	var maxChange = 0;
	if (diff) {
		for (var i = 1; i < n; i++)
			maxChange = Math.max(maxChange, Math.abs(change(i)));
	}

	function change(i) {
		return (TOTAL ? val[i] / TOTAL : 0) - (TOTAL_BEFORE ? bef[i] / TOTAL_BEFORE : 0);
	}

	function colour(i) {
		var name = names[lab[i]], v, w;

		if (matched && matched[i])
			return 'rgb(230,0,230)';
		if (diff) {
			var d = change(i), x = maxChange > 0 ? Math.min(1, Math.abs(d) / maxChange) : 0;
			var c = 245 - 190 * x;

			if (x < 0.01)
				return 'rgb(245,245,245)';
			return d > 0 ? rgb(250, c, c) : rgb(c, c, 250);
		}
		v = hash(name);
		w = hash(name + '#');
		if (name === '[off-cpu]') /* waiting (--off-cpu wall-clock view): violet */
			return rgb(150 + 20 * v, 110 + 20 * w, 230);
		switch (kinds[lab[i]]) {
		case 1: /* kernel: blues */
			return rgb(70 + 60 * v, 150 + 60 * w, 215 + 40 * v);
		case 2: /* JIT: greens */
			return rgb(60 + 60 * v, 180 + 55 * w, 60 + 50 * v);
		case 3: /* process names, [unknown], aggregates: greys */
			return rgb(180 + 30 * v, 180 + 30 * v, 195 + 30 * v);
		case 4: /* Python: aquas */
			return rgb(50 + 60 * v, 185 + 50 * w, 185 + 50 * v);
		case 5: /* inlined native code: the user colours, lighter */
			return rgb(225 + 30 * v, 150 + 90 * w, 110 + 60 * v);
		case 6: /* Lisp: ambers to olives */
			return rgb(175 + 50 * v, 150 + 50 * w, 40 + 40 * v);
		case 7: /* interpreted Java: the JIT greens, paler */
			return rgb(140 + 50 * v, 210 + 40 * w, 130 + 40 * v);
		default: /* user code: reds to yellows */
			return rgb(205 + 50 * v, 230 * w, 55 * v);
		}
	}

	var KIND_NOTE = [' [user]', ' [kernel]', ' [JIT]', '', ' [Python]', ' [inlined]', ' [Lisp]',
		' [interpreted]'];

	function describe(i) {
		var s = names[lab[i]] + KIND_NOTE[kinds[lab[i]]] + '\n' + fmt(val[i]) +
			UNIT + ', ' + pct(val[i], TOTAL);

		if (zoom !== 0 && i !== zoom && dep[i] > dep[zoom])
			s += ' (' + pct(val[i], val[zoom]) + ' of ' + names[lab[zoom]] + ')';
		if (diff) {
			var d = 100 * change(i);

			s += '\nbefore: ' + fmt(bef[i]) + UNIT + ', ' + pct(bef[i], TOTAL_BEFORE) +
				'\nchange: ' + (d >= 0 ? '+' : '') + d.toFixed(2) + ' points';
		}
		return s;
	}

	/* Width of one character of the frame font, measured once. */
	var CW = (function () {
		var t = doc.createElementNS(NS, 'text'), w;

		t.textContent = 'MMMMMMMMMMMMMMMMMMMM';
		framesG.appendChild(t);
		w = t.getComputedTextLength ? t.getComputedTextLength() / 20 : 0;
		framesG.removeChild(t);
		return w > 0 ? w : 7.2;
	})();

	/*
	 * Only a C++ (or Rust) signature is shortened: template arguments and
	 * parameter lists go first, ns::f<T>(int) const -> ns::f() const. Other
	 * parentheses and angle brackets are part of the name and stay: a Python
	 * frame's file, "json_work (app.py)", and its "<locals>", "<lambda>"; a Go
	 * method "main.(*T).run"; a source suffix " (main.go:12)", which is kept
	 * after a shortened C++ name too. A name is a signature when it is a
	 * user, JIT or inlined frame (not Python, kernel or a process name) with
	 * "::" or a parameter list at its end.
	 */
	var CXX_KINDS = [true, false, true, false, false, true, false];

	/* Index of the "(" that opens a trailing " (file)" or " (file:line)", or -1. */
	function sourceSuffix(s) {
		var depth = 0;

		if (s.charAt(s.length - 1) !== ')')
			return -1;
		for (var i = s.length - 1; i > 0; i--) {
			if (s[i] === ')')
				depth++;
			else if (s[i] === '(' && --depth === 0)
				return s[i - 1] === ' ' ? i - 1 : -1;
		}
		return -1;
	}

	function isSignature(s) {
		var t = s.replace(/( const| volatile| noexcept| &&| &)+$/, '');

		if (s.indexOf('::') >= 0)
			return true;
		/* f(int): a parameter list right after a name (not Go's "pkg.(*T)"). */
		return t.charAt(t.length - 1) === ')' && /[\w>\]]\(/.test(t);
	}

	function simplify(s) {
		var out = '', angle = 0, paren = 0;

		for (var i = 0; i < s.length; i++) {
			var ch = s[i];

			if (!angle && !paren && s.startsWith('(anonymous namespace)', i)) {
				out += '(anonymous namespace)';
				i += 20;
			} else if (ch === '<' && i > 0 && s.slice(i - 8, i) !== 'operator')
				angle++;
			else if (ch === '>' && angle > 0)
				angle--;
			else if (ch === '(' && !angle) {
				if (!paren)
					out += '(';
				paren++;
			} else if (ch === ')' && paren > 0) {
				paren--;
				if (!paren)
					out += ')';
			} else if (!angle && !paren)
				out += ch;
		}
		return out;
	}

	/* name shortened when it is a C++ signature, else as it is. */
	function shorten(name, kind) {
		var cut = sourceSuffix(name), core = cut >= 0 ? name.slice(0, cut) : name;

		if (!CXX_KINDS[kind] || !isSignature(core))
			return name;
		return simplify(core) + (cut >= 0 ? name.slice(cut) : '');
	}

	function fit(name, kind, w) {
		var max = Math.floor((w - 6) / CW);

		if (max < 3)
			return '';
		if (name.length <= max)
			return name;
		var s = shorten(name, kind);
		if (s.length <= max)
			return s;
		return s.slice(0, max - 1) + '\u2026';
	}

	function yOf(d) {
		return inverted ? TOP + d * FH : H - BOTTOM - (d + 1) * FH;
	}

	function draw(into, i, x, w, cls) {
		var g = doc.createElementNS(NS, 'g'), t, r, label;

		g.setAttribute('data-i', i);
		if (cls)
			g.setAttribute('class', cls);
		t = doc.createElementNS(NS, 'title');
		t.textContent = describe(i);
		g.appendChild(t);
		r = doc.createElementNS(NS, 'rect');
		r.setAttribute('x', x.toFixed(1));
		r.setAttribute('y', yOf(dep[i]));
		r.setAttribute('width', Math.max(w - 0.5, 0.1).toFixed(1));
		r.setAttribute('height', FH - 1);
		r.setAttribute('fill', colour(i));
		g.appendChild(r);
		label = fit(names[lab[i]], kinds[lab[i]], w);
		if (label) {
			var tx = doc.createElementNS(NS, 'text');

			tx.setAttribute('x', (x + 3).toFixed(1));
			tx.setAttribute('y', yOf(dep[i]) + FH - 4.5);
			tx.textContent = label;
			g.appendChild(tx);
		}
		into.appendChild(g);
	}

	function render() {
		var frag = doc.createDocumentFragment(), inner = W - 2 * PAD;
		var scale = val[zoom] > 0 ? inner / val[zoom] : 0, sn = [zoom], sx = [PAD];

		/* The zoomed frame's ancestors span the width, faded. */
		for (var a = par[zoom]; a >= 0; a = par[a])
			draw(frag, a, PAD, inner, 'anc');
		while (sn.length) {
			var i = sn.pop(), x = sx.pop(), w = val[i] * scale;

			if (w < MIN_PX)
				continue;
			draw(frag, i, x, w, null);
			for (var c = i + 1, cx = x; c < end[i]; c = end[c]) {
				sn.push(c);
				sx.push(cx);
				cx += val[c] * scale;
			}
		}
		while (framesG.firstChild)
			framesG.removeChild(framesG.firstChild);
		framesG.appendChild(frag);
		resetB.setAttribute('class', zoom ? 'btn' : 'btn off');
		searchB.textContent = matched ? 'Clear search' : 'Search';
	}

	function zoomTo(i) {
		zoom = i >= 0 && i < n ? i : 0;
		render();
	}

	function search(t) {
		term = t || '';
		if (!term) {
			matched = null;
			matchedT.textContent = ' ';
			render();
			return 0;
		}
		var re = null, hit = [], sum = 0;

		try {
			re = new RegExp(term);
		} catch (e) {
			re = null; /* not a regular expression: match it as text */
		}
		for (var l = 0; l < names.length; l++)
			hit[l] = re ? re.test(names[l]) : names[l].indexOf(term) >= 0;
		matched = new Uint8Array(n);
		for (var i = 1; i < n; i++)
			matched[i] = hit[lab[i]] ? 1 : 0;
		/* Outermost matches only: a recursive function counts once. */
		for (var j = 1; j < n;) {
			if (matched[j]) {
				sum += val[j];
				j = end[j];
			} else {
				j++;
			}
		}
		matchedT.textContent = 'Matched: ' + pct(sum, TOTAL) + ' (' + fmt(sum) + ' of ' +
			fmt(TOTAL) + UNIT + ')';
		render();
		return sum;
	}

	function frameOf(e) {
		for (var el = e.target; el && el !== framesG; el = el.parentNode)
			if (el.getAttribute && el.getAttribute('data-i') !== null)
				return +el.getAttribute('data-i');
		return -1;
	}

	function askSearch() {
		if (matched) {
			search('');
			return;
		}
		var t = window.prompt('Search frames (regular expression):', term);
		if (t !== null)
			search(t);
	}

	framesG.addEventListener('click', function (e) {
		var i = frameOf(e);

		if (i >= 0)
			zoomTo(i);
	});
	framesG.addEventListener('mouseover', function (e) {
		var i = frameOf(e);

		if (i >= 0)
			details.textContent = describe(i).replace(/\n/g, ' \u00b7 ');
	});
	framesG.addEventListener('mouseout', function () {
		details.textContent = ' ';
	});
	resetB.addEventListener('click', function () {
		zoomTo(0);
	});
	searchB.addEventListener('click', askSearch);
	doc.addEventListener('keydown', function (e) {
		if ((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) {
			e.preventDefault();
			askSearch();
		} else if (e.key === 'Escape') {
			zoomTo(0);
		}
	});

	/* For scripting and tests: the same actions the buttons take. */
	window.flamegraph = { zoom: zoomTo, search: search, reset: function () { zoomTo(0); },
			      shorten: shorten };
	var loading = doc.getElementById('fg-loading');
	if (loading)
		loading.parentNode.removeChild(loading);
	if (n)
		render();
})();
