"""The tiny LM's training and generation loop as a script: `python examples/tinylm_train.py --steps 30`.

Running a script puts its folder (examples/) on sys.path, so the tinylm package imports as is.
"""

from tinylm.train import main

if __name__ == "__main__":
    raise SystemExit(main())
