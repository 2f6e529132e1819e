"""utility (placeholder: being written)."""
__all__: list = []
