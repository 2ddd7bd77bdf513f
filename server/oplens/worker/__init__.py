"""The worker side: the process that imports torch and the user's code and runs one profile.

`__main__` (the process: `python -m oplens.worker FD`), `profiling` (the profile's steps),
`usercode` (importing the user's file, arguments, their exceptions), `linemarks` (a profiler
range per executed line), `events` (Kineto's events as plain records), `compiled` (the lines a
`torch.compile` graph fused). The parent side (`oplens.engine`) never imports this package.
"""
