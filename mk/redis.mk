# A real Redis server for the team-cache tests (tests/test_remote.py).
# Included by the main Makefile; `make test` depends on `redis-deps`.
#
#   make redis-deps   Debian's redis-server (if missing). The tests start their own
#                     `redis-server --port <free port> --save '' --appendonly no` and
#                     stop it after, so nothing is left running and no service is enabled.

REDIS_SERVER ?= /usr/bin/redis-server

.PHONY: redis-deps

redis-deps:
	@if [ ! -x $(REDIS_SERVER) ]; then \
		echo "installing redis-server (Debian)"; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server; \
	fi
	@$(REDIS_SERVER) --version
