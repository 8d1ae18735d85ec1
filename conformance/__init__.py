"""The conformance suite: schema fixtures, the frame validator and its pytest plugin."""
