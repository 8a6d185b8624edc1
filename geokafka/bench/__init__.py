"""`geokafka bench`: raw Kafka tools vs MirrorMaker 2 vs geokafka on local clusters started for the run."""
