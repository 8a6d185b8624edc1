"""``python -m geokafka``: the same as the ``geokafka`` command."""

from geokafka.cli.main import main

main()
