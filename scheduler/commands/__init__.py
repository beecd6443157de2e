"""One module per CLI subcommand. Each exposes ``register(subparsers)``; the parser's ``func`` runs it."""
