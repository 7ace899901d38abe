# mtserve: two commands for a fresh machine.
#   make run    install, pull the default model, serve on http://127.0.0.1:8000
#   make test   install with test extras, then the whole test suite
#   make test-unit  the fast part (no model, browser, torch or Ray), with the light test extra
#   make lint   ruff over the code and the tests

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
MTSERVE := $(BIN)/mtserve
# The small model keeps the integration tests fast.
TEST_MODEL := qwen2.5-coder-0.5b-instruct-q4_k_m

.PHONY: install install-test run test test-unit lint chromium clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Re-runs only when the project's dependencies change.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The light extra: what the unit tests and ruff need, without torch, Ray or Playwright.
$(VENV)/.installed-test-unit: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[test-unit]'
	touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test chromium

# Debian's Chromium for the WebUI tests (Playwright drives it; no browser download), and the
# fonts the PDF writer embeds (Noto CJK for Chinese/Japanese/Korean, DejaVu for the rest).
SYSTEM_PACKAGES := chromium fonts-noto-cjk fonts-dejavu-core
chromium:
	@missing=$$(for p in $(SYSTEM_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

run: install
	$(MTSERVE) models pull
	$(MTSERVE) serve

test: install-test
	$(MTSERVE) models pull $(TEST_MODEL)
	MTSERVE_TEST_MODEL=$(TEST_MODEL) $(BIN)/pytest -q --durations=25

# Deselects what needs the model, a browser, torch (seq2seq) or Ray; `make test` runs those too.
test-unit: $(VENV)/.installed-test-unit
	$(BIN)/pytest -q --durations=25 -m "not model and not webui and not seq2seq and not ray"

lint: $(VENV)/.installed-test-unit
	$(BIN)/ruff check mtserve tests benchmarks

clean:
	rm -rf $(VENV) *.egg-info
