# An S3 server for the bucket team-cache tests (tests/test_bucket.py).
# Included by the main Makefile; `make test` depends on `s3-deps`.
#
#   make s3-deps   moto's standalone S3 server, obstore and boto3, which `pip install
#                  -e .[test]` brings (PyPI). The tests start their own
#                  `python -m moto.server -H 127.0.0.1 -p <free port>`, make a bucket
#                  and stop the server after, so nothing is left running.

.PHONY: s3-deps

s3-deps: $(STAMP)
	@$(PY) -c "import moto, moto.server, obstore, boto3; \
		print('S3 server: moto', moto.__version__, '- client: obstore', obstore.__version__)"
