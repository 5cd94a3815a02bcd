# The JupyterLab sidebar: browser tests and a lab to try it in.
# Included by the main Makefile after it defines VENV, PY and STAMP (the venv with
# `pip install -e .[test]`, whose build hook builds the labextension with npm).
#
#   make ui-deps   Debian's chromium (if missing) and the npm packages of the tests
#   make test-ui   unit tests of the view model (vitest), the extension enabled in
#                  jupyter, and the browser tests in a real JupyterLab and Notebook 7
#                  (Playwright); screenshots land in docs/screenshots/
#   make lab       JupyterLab on demo_notebooks/ with the extension

CHROMIUM ?= /usr/bin/chromium
UI_NPM_ENV := PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
LAB_CONFIG_DIR := $(VENV)/lab-config
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: ui-deps ui-py-deps labext test-ui test-ui-unit test-ui-browser check-enabled lab

VENV_BIN := $(abspath $(VENV))/bin

# JupyterLab and Notebook 7, for the browser tests and `make lab` (the package needs
# only jupyter_server at run time).
ui-py-deps: $(STAMP)
	@$(VENV_BIN)/python -c 'import jupyterlab, notebook' 2>/dev/null || $(VENV_BIN)/pip install -q 'jupyterlab>=4.0,<5' 'notebook>=7'

# Rebuild the extension from labextension/src and link the venv to the build, so what
# the tests load is what the sources say (the editable install copied one build).
labext: ui-py-deps
	cd labextension && PATH="$(VENV_BIN):$$PATH" npm run build
	PATH="$(VENV_BIN):$$PATH" $(VENV_BIN)/jupyter labextension develop --overwrite .

ui-deps:
	@if [ ! -x $(CHROMIUM) ]; then \
		echo "installing chromium (Debian)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; \
	fi
	cd labextension && $(UI_NPM_ENV) npm ci --no-audit --no-fund
	cd tests/ui && $(UI_NPM_ENV) npm ci --no-audit --no-fund

test-ui-unit: ui-deps
	cd labextension && npm run --silent prettier:check && npx vitest run

# The extension as a user gets it: listed and enabled by `jupyter` itself.
check-enabled: ui-py-deps
	@$(VENV)/bin/jupyter labextension list 2>&1 | tee $(VENV)/labextension-list.txt
	@grep -E 'resumable-cells .*enabled.*OK' $(VENV)/labextension-list.txt > /dev/null \
		|| { echo "FAIL: the resumable-cells labextension is not enabled"; exit 1; }
	@$(VENV)/bin/jupyter server extension list 2>&1 | tee $(VENV)/serverextension-list.txt
	@grep -E 'resumable_cells .*enabled' $(VENV)/serverextension-list.txt > /dev/null \
		|| { echo "FAIL: the resumable_cells server extension is not enabled"; exit 1; }
	@echo "resumable-cells: labextension and server extension enabled"

test-ui-browser: ui-deps labext
	cd tests/ui && PATH="$(VENV_BIN):$$PATH" CHROMIUM=$(CHROMIUM) npx playwright test

test-ui: test-ui-unit labext check-enabled test-ui-browser

lab: labext
	@mkdir -p $(LAB_CONFIG_DIR)/settings/@jupyterlab/apputils-extension
	@echo 'c.LabApp.news_url = None' > $(LAB_CONFIG_DIR)/jupyter_lab_config.py
	@echo 'c.LabApp.check_for_updates_class = "jupyterlab.NeverCheckForUpdate"' >> $(LAB_CONFIG_DIR)/jupyter_lab_config.py
	@echo 'c.LabApp.user_settings_dir = "$(abspath $(LAB_CONFIG_DIR))/settings"' >> $(LAB_CONFIG_DIR)/jupyter_lab_config.py
	@test -f $(LAB_CONFIG_DIR)/settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings \
		|| echo '{"fetchNews": "false"}' > $(LAB_CONFIG_DIR)/settings/@jupyterlab/apputils-extension/notification.jupyterlab-settings
	cd demo_notebooks && JUPYTER_CONFIG_DIR=$(abspath $(LAB_CONFIG_DIR)) \
		$(VENV_BIN)/jupyter lab $(ROOT_FLAG)
