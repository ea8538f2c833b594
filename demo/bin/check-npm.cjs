// Verify that every npm server the demo config starts is installed:
// `node demo/bin/check-npm.cjs demo` exits 1 naming the first missing script.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const root = path.resolve(process.argv[2] || ".");
const toml = fs.readFileSync(path.join(root, "cartograph.toml"), "utf8");
const scripts = [...toml.matchAll(/"(node_modules\/[^"]+\.(?:c|m)?js)"/g)].map((m) => m[1]);
const missing = scripts.filter((s) => !fs.existsSync(path.join(root, s)));
if (missing.length > 0) {
  console.error(`missing demo npm server scripts: ${missing.join(", ")}`);
  process.exit(1);
}
