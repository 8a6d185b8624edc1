"""The ``geokafka`` command line: click commands that parse, call one layer below, and render (the top layer)."""
