"""The profiling engine's parent side: it never imports torch; the worker (`oplens.worker`) does.

A front end (`cli`, `lsp`) builds a request and calls the module that runs it; each name is
imported from the module that defines it (this package re-exports nothing):

    profile    `oplens profile`: one function in a worker (`ProfileRequest`, `profile`)
    program    `oplens run`: the user's program with its targets captured (`ProgramRequest`, `run_program`)
    request    what every request sets (`Options`: backend, numbers, time limit) and the one check of it
    runs       run directories: `Staging` (a run staged, completed and stored whole, or discarded with its
               failure explained and its log kept), and the stored runs read back
    targets    the function from the file's AST · process: the worker process
    merge · compare · diff · analyze · doctor · calibrate: the other commands, on stored runs or the host
"""
