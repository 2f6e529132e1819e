"""Ratio benchmarks against peers; ``python -m benchmarks`` runs the registered ones (see ``__main__``)."""
