"""CLI commands, one module per command family; pareis/cli.py registers them."""
