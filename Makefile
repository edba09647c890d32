# Two commands do all set-up on a fresh machine:  make demo   and   make test
# Both create .venv, install precision_tool with what the tests need (TensorFlow CPU included), then run.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PEER_DIR ?= ../shared/peers/msaccucmp
export PEER_VENV ?= /tmp/peer-venv
STAMP  := $(VENV)/.installed
DEMO_WORKSPACE := sample_dumps/cnn_workspace
DEMO_OUT := /tmp/precision_tool_demo

.PHONY: venv lint test test-fast demo check-peer peer browser check-report bench sample-dumps clean

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

# Headless Chromium for the HTML report's browser test (Debian's package; about 30 s and 113 MB to fetch).
# Tolerant: without root or a package mirror, the browser tests skip and say why.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	 (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium) >/dev/null 2>&1 || \
	 echo "chromium not installed: browser tests will be skipped"

# ruff (settings in pyproject.toml) on all Python in the tree, mypy on the package (its files: [tool.mypy]).
lint: venv
	$(PY) -m ruff check precision_tool tests benchmarks sample_dumps
	$(PY) -m mypy

test: venv lint peer browser
	$(PY) -m pytest -q

test-fast: venv
	$(PY) -m pytest -q -m "not tf and not peer"

check-peer: venv peer
	$(PY) -m pytest -q -m peer -rs

# ac -c exits 1 when it finds the planted culprit (as compare does): that is the demo working, not failing.
# Compare results go to $(DEMO_OUT), never into the committed sample workspace.
demo: venv
	$(VENV)/bin/precision_tool -d $(DEMO_WORKSPACE) ac -c -o $(DEMO_OUT) || [ $$? -eq 1 ]

# The HTML report of the sample CNN rendered in headless Chromium (also part of make test).
check-report: demo browser
	$(PY) -m pytest -q -rs -m browser tests/reports/test_html_browser.py
	$(VENV)/bin/precision_tool -d $(DEMO_WORKSPACE) report -f $(DEMO_OUT) -o $(DEMO_OUT)/report.html --plots $(DEMO_OUT)/plots \
	 || [ $$? -eq 1 ]

sample-dumps: venv
	$(PY) sample_dumps/generate.py

bench: venv peer
	$(PY) benchmarks/run.py
	$(PY) benchmarks/alignment_scale.py

clean:
	rm -rf $(VENV) .pytest_cache build *.egg-info
