// What `vscode` resolves to in the unit tests (extension/test/tsconfig.json's `paths`): not a module,
// so a test that imports a feature's VS Code glue, directly or through another module, fails with
// "TS2306: File '.../no-vscode-in-unit-tests.d.ts' is not a module". Unit tests run under plain
// Node: test the pure model beside the glue (e.g. heat/heat.ts, not heat/decorations.ts).
