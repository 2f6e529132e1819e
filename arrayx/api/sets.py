"""sets (placeholder: being written)."""
__all__: list = []
