// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
/*
 * validate_speedscope.js FILE... - validates speedscope files against the
 * schema the speedscope npm package ships (dist/release/file-format-schema.json).
 * Prints "ok FILE" per valid file; exits 1 with the errors otherwise.
 */
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');

const schemaPath = path.join(__dirname, '..', '..', 'node_modules', 'speedscope', 'dist',
			     'release', 'file-format-schema.json');
const schema = JSON.parse(fs.readFileSync(schemaPath, 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
let bad = 0;

for (const file of process.argv.slice(2)) {
	const doc = JSON.parse(fs.readFileSync(file, 'utf8'));

	if (validate(doc)) {
		console.log('ok ' + file);
	} else {
		bad++;
		console.log('invalid ' + file + ': ' + JSON.stringify(validate.errors, null, 1));
	}
}
process.exit(bad ? 1 : 0);
