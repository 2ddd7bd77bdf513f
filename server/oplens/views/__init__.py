"""Each page a front end shows, as a record the server builds (issue 32, part 1): every string a user
reads (cells, labels, tooltips, sentences) written once, here, from the runs and what the engine
derived of them; the VS Code webview draws these records (geometry and DOM only), and the CLI,
the hovers and the notebook write the same words from the same functions.

Pure: no torch, no pygls, no rich (pyproject.toml's import-linter contracts). The records' TypeScript
interfaces and readers are generated (`extension/shared/generated/views.ts`).
"""
