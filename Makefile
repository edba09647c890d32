# Two commands do all set-up on a fresh machine:  make demo   and   make test
# Both create .venv, install precision_tool with what the tests need (TensorFlow CPU included), then run.

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PEER_DIR ?= ../shared/peers/msaccucmp
export PEER_VENV ?= /tmp/peer-venv
STAMP  := $(VENV)/.installed
# The users' own environments (issue 12): Huawei's TF adapter supports TF 1.15 on Python 3.7 and TF 2.6 on 3.7-3.9.
# Each gets TensorFlow with the numpy/protobuf its users have, then precision_tool by plain `pip install .`,
# and tests/user_env/freeze_unchanged.py fails the build if that install changed any package TensorFlow already had.
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $$HOME/.pyenv)
TF115_PYTHON ?= $(PYENV_ROOT)/versions/3.7.16/bin/python
TF26_PYTHON  ?= $(PYENV_ROOT)/versions/3.9.18/bin/python
TF115_VENV := .venv-tf115
TF26_VENV  := .venv-tf26
TF115_PINS := tensorflow-cpu==1.15.0 numpy==1.18.5 protobuf==3.20.3
TF26_PINS  := tensorflow-cpu==2.6.5 numpy==1.19.5 protobuf==3.19.6
USER_ENV_TESTS := -q -p no:cacheprovider
DEMO_WORKSPACE := sample_dumps/cnn_workspace
DEMO_OUT := out/demo

.PHONY: venv user-envs test-user-envs lint test test-fast demo check-peer peer browser check-report bench bench-diagnosis sample-dumps clean

venv: $(STAMP)

$(STAMP): setup.cfg setup.py pyproject.toml precision_tool/metrics/_pairstats.c precision_tool/_mapguard.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# setuptools warns on every editable install that a folder named like the package could shadow it: it is the package
	PYTHONWARNINGS='ignore:Editable installation' $(PY) -m pip install -q -e '.[tf,test,cluster]'
	$(PY) -m pip install -q --no-deps tf_keras==2.21.0  # Keras 2 for the tests; with deps it pulls the full tensorflow wheel
	touch $@

# $(call user_env,VENV,PYTHON,PINS): TensorFlow as its users have it, then precision_tool as they install it.
define user_env
	test -x $(1)/bin/python || $(2) -m venv $(1)
	$(1)/bin/python -m pip install -q --upgrade 'pip<24.1'
	$(1)/bin/python -m pip install -q $(3)
	$(1)/bin/python -m pip freeze --exclude-editable > $(1)/freeze-before.txt
	$(1)/bin/python -m pip install -q .
	$(1)/bin/python -m pip freeze --exclude-editable > $(1)/freeze-after.txt
	$(1)/bin/python tests/user_env/freeze_unchanged.py $(1)/freeze-before.txt $(1)/freeze-after.txt
	$(1)/bin/python -m pip install -q -c $(1)/freeze-before.txt pytest hypothesis pexpect
	touch $(1)/.installed
endef

$(TF115_VENV)/.installed: setup.cfg pyproject.toml tests/user_env/freeze_unchanged.py
	$(call user_env,$(TF115_VENV),$(TF115_PYTHON),$(TF115_PINS))

$(TF26_VENV)/.installed: setup.cfg pyproject.toml tests/user_env/freeze_unchanged.py
	$(call user_env,$(TF26_VENV),$(TF26_PYTHON),$(TF26_PINS))

user-envs: $(TF115_VENV)/.installed $(TF26_VENV)/.installed

# On this checkout's code: in the oldest environment (Python 3.7, numpy 1.18, protobuf 3.20) every test that does
# not need TF 2.21, the peer or a browser (~1 min: the analysis commands and shell on old numpy too), with the C
# passes and the SIGBUS guard built for Python 3.7 beside the main environment's, as pip builds them there; in the
# TF 2.6 one only the tests marked `compat` (capture, tf_dump, one analysis run).
test-user-envs: user-envs
	$(TF115_VENV)/bin/python setup.py -q build_ext --inplace
	PRECISION_TOOL_EXPECT_C=1 PYTHONPATH=$(CURDIR) $(TF115_VENV)/bin/python -m pytest $(USER_ENV_TESTS) \
	  -m "compat or not (tf or peer or browser)"
	PYTHONPATH=$(CURDIR) $(TF26_VENV)/bin/python -m pytest $(USER_ENV_TESTS) -m compat

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

# ruff (settings in pyproject.toml) on all Python in the tree, mypy on the package (its files: [tool.mypy]),
# vermin: nothing in the package may need a Python newer than 3.7 (the TF 1.15 users' Python), and vulture: no
# function, method, class or property of the package that nothing calls (the tests count as callers; framework
# hooks are listed in tests/lint/vulture_whitelist.py).
lint: venv
	$(PY) -m ruff check precision_tool tests benchmarks sample_dumps
	$(PY) -m mypy
	$(VENV)/bin/vermin -q -t=3.7- --no-tips --violations precision_tool
	@$(VENV)/bin/vulture precision_tool tests benchmarks sample_dumps --min-confidence 60 \
	 | grep -E '^precision_tool/.*unused (function|method|class|property)' \
	 && { echo "dead code above: remove it, or list a framework hook in tests/lint/vulture_whitelist.py"; exit 1; } \
	 || true

test: venv lint peer browser test-user-envs
	PRECISION_TOOL_EXPECT_C=1 $(PY) -m pytest -q -rs  # -rs: each skip with its reason (no peer, no browser)

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
	$(PY) benchmarks/replay_cost.py
	$(PY) benchmarks/ge_graph_memory.py
	$(PY) benchmarks/machinery.py  # proto_records and the collector hold, each with and without (~60 s)
	$(PY) benchmarks/statistics_scale.py  # ac -c on 20,000 ops: statistics (4 steps) beside tensors (~2 min)
	$(PY) benchmarks/cluster_overhead.py  # compare --cluster on 1 and 2 local Dask workers beside local (~30 s)

# Is ac -c's culprit the op that adds the error? 11 architectures under --numerics ascend910 and ideal, plants and
# clean runs, truth by --exact (docs/local-error.md); about 40 minutes on 2 cores. Not part of make test.
bench-diagnosis: venv
	$(PY) benchmarks/diagnosis.py

clean:
	rm -rf $(VENV) $(TF115_VENV) $(TF26_VENV) .pytest_cache build *.egg-info
