"""The profiling engine's parent side: it never imports torch; the worker (`oplens.worker`) does.

A front end (`cli`, `lsp`) builds a request and calls the module that runs it; each name is
imported from the module that defines it (this package re-exports nothing):

    profile    `oplens profile`: one function in a worker (`ProfileRequest`, `profile`)
    program    `oplens run`: the user's program with its targets captured (`ProgramRequest`, `run_program`)
    request    what both requests share: the defaults of their numbers and one check of them
    finalize   what both do with the worker's answer: a run completed and stored, a failure explained
    targets    the function from the file's AST · process: the worker process · runs: run directories
    merge · compare · diff · analyze · doctor · calibrate: the other commands, on stored runs or the host
"""
