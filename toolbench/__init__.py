"""toolbench: a load-tool meta-benchmark and result normalizer."""
