"""linalg placeholder."""
__all__: list = []
EXTENSION_ALL: list = []
