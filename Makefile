# Two commands do all set-up on a fresh machine:  make demo   and   make test
# Both create .venv, install precision_tool with what the tests need (TensorFlow CPU included), then run.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PEER_DIR ?= ../shared/peers/msaccucmp
export PEER_VENV ?= /tmp/peer-venv
STAMP  := $(VENV)/.installed
DEMO_DUMP := sample_dumps/single_ops

.PHONY: venv test test-fast demo check-peer peer bench sample-dumps clean

venv: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[tf,test]'
	touch $@

# The msaccucmp peer (CANN's comparator) in its own venv, when ../shared is beside this checkout.
peer:
	@if [ -x $(PEER_DIR)/setup_peer.sh ]; then bash $(PEER_DIR)/setup_peer.sh >/dev/null && echo "peer ready"; \
	 else echo "no peer at $(PEER_DIR): peer tests will be skipped"; fi

test: venv peer
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not tf and not peer"

check-peer: venv peer
	$(PY) -m pytest -q -m peer -rs

demo: venv
	$(VENV)/bin/precision_tool dc $(DEMO_DUMP) -o /tmp/precision_tool_demo_dc

sample-dumps: venv
	$(PY) sample_dumps/generate.py

bench: venv peer
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
