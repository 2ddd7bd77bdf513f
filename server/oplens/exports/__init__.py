"""A stored run written for the viewers users already use (`oplens export`): Perfetto and Chrome's trace viewer
(perfetto.py), speedscope's flame graphs (speedscope.py), TensorBoard's PyTorch profiler plugin and Holistic Trace
Analysis (tensorboard.py). Each reads the run's own traces (traces.py: every rank's, on one time base) and names
OpLens's line ranges as the lines they are. Parent side, no torch."""
