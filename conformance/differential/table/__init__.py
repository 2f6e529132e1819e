"""The differential table, one module per spec category (``functions`` assembles it)."""
