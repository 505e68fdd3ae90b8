# Two commands a fresh clone needs: `make run` and `make test`. Both install what they need:
# uv (into .tools/, from PyPI) and the locked dependencies (into .venv/, from uv.lock).
PYTHON ?= python3
UV := .tools/bin/uv
UV_VERSION := 0.13.9
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)

.PHONY: run test lint bench install clean

$(UV):
	$(PYTHON) -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

# --compile-bytecode: litellm is ~2,700 modules; compiled once here, every start (and every
# `agentsh -p` the tests spawn) skips recompiling them, which also holds where
# PYTHONDONTWRITEBYTECODE is set (many CI images): about half the CPU of `import litellm`.
.venv/.synced: $(UV) uv.lock pyproject.toml
	$(UV) sync --locked --quiet --compile-bytecode
	touch $@

install: .venv/.synced

run: install
	.venv/bin/agentsh $(ARGS)

# Four workers on two cores: the suite mostly waits (Pilot's idle checks after each key, timers,
# agentsh and MCP processes starting), so two workers kept ~1.2 cores busy; four keep both.
# worksteal: each worker starts on a contiguous quarter (a module's fixtures are set up once,
# not on every worker) and takes tests from another's end when it runs out (no idle tail).
#
# Bytecode, even where PYTHONDONTWRITEBYTECODE is set (many CI images; this machine): agentsh's
# and the tests' modules are compiled once here, not in every agentsh process a test starts, and
# pytest keeps its assertion-rewritten test modules, which each worker otherwise rewrites and
# compiles again at every collection (5-10 s of CPU per worker; __pycache__ is git-ignored).
test: install
	.venv/bin/ruff check agentsh tests benchmarks
	.venv/bin/mypy
	.venv/bin/python -m compileall -q agentsh tests
	env -u PYTHONDONTWRITEBYTECODE .venv/bin/pytest -n 4 --dist worksteal $(PYTEST_ARGS)

bench: install
	for b in benchmarks/bench_*.py; do echo "== $$b"; .venv/bin/python $$b || exit 1; done

clean:
	rm -rf .tools .venv
