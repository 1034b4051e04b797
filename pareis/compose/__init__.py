"""The composition root: the only package that turns settings into concrete adapters and wires them."""
