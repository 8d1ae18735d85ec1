"""Maintainer tools: the fixture recorder, schema tools, drift, bench."""
