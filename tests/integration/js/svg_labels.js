// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * svg_labels.js SVG [NAMES_JSON] - opens a bpfprof flame graph (a file, or an
 * http:// URL) in headless Chromium (Debian's /usr/bin/chromium, or
 * $CHROMIUM) and prints one JSON object: every drawn frame's label text and
 * full name (its tooltip's first line), page errors, and what the graph's
 * own shortener makes of each [name, kind] pair of NAMES_JSON
 * (window.flamegraph.shorten), for test_first_hour.py.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
	const [svg, namesJson = '[]'] = process.argv.slice(2);
	const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bpfprof-chromium-'));
	const ctx = await chromium.launchPersistentContext(profileDir, {
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		viewport: { width: 1250, height: 900 },
		args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
		       '--disable-component-update', '--disable-sync', '--no-first-run'],
	});
	const page = ctx.pages()[0] || await ctx.newPage();
	const out = { errors: [] };

	page.on('pageerror', (e) => out.errors.push(String(e)));
	page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
	await page.goto(/^https?:/.test(svg) ? svg : 'file://' + path.resolve(svg));
	await page.waitForSelector('#frames g', { timeout: 30000 });
	out.frames = await page.evaluate(() => [...document.querySelectorAll('#frames g')].map((g) => {
		const t = g.querySelector('text');
		return {
			text: t ? t.textContent : '',
			name: g.querySelector('title').textContent.split('\n')[0],
			width: +g.querySelector('rect').getAttribute('width'),
		};
	}));
	out.shortened = await page.evaluate((names) =>
		names.map(([n, k]) => window.flamegraph.shorten(n, k)), JSON.parse(namesJson));
	await ctx.close();
	fs.rmSync(profileDir, { recursive: true, force: true });
	console.log(JSON.stringify(out));
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
