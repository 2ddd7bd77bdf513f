"""What the tests share, each once: the paths of the repository and its test data (`paths`), the CLI as a user
runs it (`cli`), a real LSP client of `oplens serve` (`lsp`), the Neuron stand-ins' writers and their known
figures (`neuron`), the stored run of the analysis tests (`stored`), processes started and ended by PID
(`processes`), and the real systems the `system` tier starts: an OpenSSH host (`sshtunnel`), two emulated
Slurm nodes (`slurmlab`), an IPython kernel (`kernel`) and a torch-only environment (`torchonly`)."""
