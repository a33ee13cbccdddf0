"""Benchmark scripts: run one with ``python -m benchmarks.<name>``; they print figures."""
