"""Slurm through slurmrestd: the client (``client``), one normaliser per REST API version
(``v0_0_38``) and the parsers of Slurm's own notations (``notation``)."""
