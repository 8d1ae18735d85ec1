"""Mutation testing of codexmini's pure modules (``make mutation``).

Coverage says a line ran; a mutant says whether a test would notice the line
change.  For each module in :data:`targets.TARGETS` the tool makes every
mutant of the module's source (``mutants``: the operators and what is left
alone are listed there), runs the module's own fast test files against each
one (``runner``: a forked child per mutant, with the mutated module served
under its real name), and reports per module how many were killed
(``report``).  A surviving mutant is a test gap -- or an *equivalent* mutant,
a change no test can see, declared with its reason in ``equivalents``.

Theory of operation, and why it is fast enough (about 2,350 mutants in
about six minutes on two busy cores): the parent imports pytest (its own
plugins too), jsonschema and the conformance plugin once; each child is a
``fork()`` of it that only re-imports the repository's own modules (from
bytecode cached for the run), then runs ``pytest -x`` (without hypothesis's
plugin, whose session summary would import all of hypothesis in every child)
so that a killed mutant costs the tests up to the first failure, not the
whole file.  A child that hangs (a mutant that
loops) is killed after its module's timeout and counted as a kill, reported
apart.  Before any mutant, each module's tests run twice: against the module
as it is (they must pass) and against a module that raises on import (they
must fail -- proof that what the tests import is the code the tool serves).

Adding a module is one row in ``targets.TARGETS``.
"""
