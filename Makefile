LINT_PATHS = sb3_maxdiff/ tests/ examples/ benchmarks/ tools/

pytest:
	python -m pytest -n 2 tests

lint:
	ruff check $(LINT_PATHS)

format:
	ruff format $(LINT_PATHS)

type:
	mypy sb3_maxdiff tests examples benchmarks tools

demo:
	python examples/demo_point_mass.py

.PHONY: pytest lint format type demo
