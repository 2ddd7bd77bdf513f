"""The notebook magics (`%load_ext oplens`): a function's lines profiled inside the user's IPython kernel."""
