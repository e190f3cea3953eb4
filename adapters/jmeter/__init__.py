"""JMeter: the adapter (adapter), its test plan (plan, templates/jmeter.jmx.j2), the JTL read as
CSV of every header version and column order (layout; jtl, its runs without quotes read at
once by fast and digits; a formatted timeStamp by dates) or XML (jtl_xml), aggregated (agg, reader,
runs), the console summariser (summary), and JMeter's own distributed mode (distributed)."""
