"""The cost model: pure functions from inputs and measured figures to costs (see ``model``)."""
