# Set-up is part of every target, idempotent: Debian libraries (once), a virtualenv with the CPU
# torch pinned from this machine's wheel (an unpinned torch pulls a multi-GB CUDA build), and the
# package itself within constraints.txt (the tested versions), re-installed when either file changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
DEBIAN_PACKAGES := libusb-1.0-0 libegl1 libopengl0 libgl1-mesa-dri
export MUJOCO_GL ?= egl

.PHONY: setup system run test test-all lint bench lock

setup: system $(VENV)/.installed

system:
	@dpkg -s $(DEBIAN_PACKAGES) >/dev/null 2>&1 || { \
		echo "installing Debian packages: $(DEBIAN_PACKAGES)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_PACKAGES); }

$(VENV)/.installed: pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev,ray,export,rl]'  # tests run Ray, ONNX, SB3
	@touch $@

run: setup
	$(BIN)/python -m robo_coevolve $(ARGS)

test: setup
	$(BIN)/python -m pytest -q $(ARGS)

test-all: setup
	$(BIN)/python -m pytest -q -m "slow or not slow" $(ARGS)

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: setup
	$(BIN)/python -m benchmarks.speed $(ARGS)

# Re-pin constraints.txt to what the venv holds now (after upgrading a package and running the tests).
lock: setup
	{ sed -n '/^#/p' constraints.txt; $(BIN)/pip freeze --exclude-editable | grep -v '^torch=='; } > constraints.tmp
	mv constraints.tmp constraints.txt
