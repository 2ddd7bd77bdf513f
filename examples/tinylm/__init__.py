"""A tiny transformer language model: the model (model.py) and its training and generation loop (train.py)."""
