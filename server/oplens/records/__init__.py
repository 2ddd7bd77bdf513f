"""The record layer: typed data that crosses OpLens's boundaries, and nothing else.

`run` (the `Run` record, written as result.json), `job` (what the parent asks a worker to do, the
target it names, and the worker's messages back), `errors` (the errors a user can act on),
`names` (names shared by the server, the CLI and the editor), `format` (how times are written).
No torch, no pygls, no rich, and no import of any other OpLens package: everything else stands on it.
"""
