"""Locust: the adapter (adapter), the locustfile it runs (templates/locustfile.py, reading its
parameters as JSON), its JSON and console output (output), its CSV set (csv_set), its worker
processes' own figures (workers) and its master/worker distributed mode (distributed)."""
