// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * svg_browser.js SVG [FRAME] [SEARCH] - opens a bpfprof flame graph in headless
 * Chromium (Debian's /usr/bin/chromium, or $CHROMIUM) and acts like a user:
 * hovers FRAME, clicks it (zoom), searches SEARCH through Ctrl+F and the
 * prompt, clicks "Reset zoom". Prints one JSON object with the DOM state after
 * each step, page errors and any non-file request, for test_outputs.py.
 */
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
	const [svg, frame = 'leaf_b', term = 'leaf_a'] = process.argv.slice(2);
	const profileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bpfprof-chromium-'));
	const ctx = await chromium.launchPersistentContext(profileDir, {
		executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
		headless: true,
		viewport: { width: 1250, height: 900 },
		args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
		       '--disable-component-update', '--disable-sync', '--no-first-run'],
	});
	const page = ctx.pages()[0] || await ctx.newPage();
	const out = { errors: [], requests: [] };

	page.on('pageerror', (e) => out.errors.push(String(e)));
	page.on('console', (m) => { if (m.type() === 'error') out.errors.push(m.text()); });
	page.on('request', (r) => { if (!r.url().startsWith('file:')) out.requests.push(r.url()); });

	const state = () => page.evaluate(() => ({
		frames: [...document.querySelectorAll('#frames g')].map((g) => {
			const r = g.querySelector('rect'), t = g.querySelector('text');
			return {
				text: t ? t.textContent : '',
				title: g.querySelector('title').textContent,
				x: +r.getAttribute('x'), y: +r.getAttribute('y'),
				width: +r.getAttribute('width'), fill: r.getAttribute('fill'),
				cls: g.getAttribute('class') || '',
			};
		}),
		reset: document.getElementById('reset').getAttribute('class'),
		search: document.getElementById('search').textContent,
		matched: document.getElementById('matched').textContent,
		details: document.getElementById('details').textContent,
		loading: !!document.getElementById('fg-loading'),
	}));

	const t0 = Date.now();
	await page.goto('file://' + path.resolve(svg));
	await page.waitForSelector('#frames g', { timeout: 30000 });
	out.loadMs = Date.now() - t0;
	out.initial = await state();

	const target = page.locator('#frames g', {
		has: page.locator('text', { hasText: new RegExp('^' + frame + '$') }),
	}).first();
	await target.hover();
	out.hover = (await state()).details;
	await target.click();
	out.zoomed = await state();

	page.once('dialog', (d) => d.accept(term));
	await page.keyboard.press('Control+f');
	await page.waitForFunction(
		() => document.getElementById('matched').textContent.startsWith('Matched'));
	out.searched = await state();

	await page.click('#reset');
	out.reset = await state();

	await ctx.close();
	fs.rmSync(profileDir, { recursive: true, force: true });
	console.log(JSON.stringify(out));
}

main().catch((e) => {
	console.error(e);
	process.exit(1);
});
