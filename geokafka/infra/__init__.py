"""Local KRaft clusters for the demo, drills, bench and tests: processes, certificates, SASL, network namespaces."""
