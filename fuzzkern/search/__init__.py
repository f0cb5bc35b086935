"""Stage 7, search: Hypothesis drives the cases, shrinks each distinct failure, and a schedule
shares the budget between targets.

In: loaded targets and a campaign's options (budget, modes, seed, corpus folder). Out: a
:class:`~fuzzkern.search.engine.TargetResult` per target: cases run, verdict counts, coverage
of layouts and sizes, and the shrunk failures (saved to the corpus, explained).

- :mod:`fuzzkern.search.engine`: one target's Hypothesis loop, known failures first;
- :mod:`fuzzkern.search.minimize`: the minimizer that runs after Hypothesis's shrinker;
- :mod:`fuzzkern.search.schedule`: the budget over targets, in slices, serial or parallel;
- :mod:`fuzzkern.search.explain`: what about a failing case matters (variants run again);
- :mod:`fuzzkern.search.database`: Hypothesis's example database (directory or redis);
- :mod:`fuzzkern.search.profiles`: named settings for the pytest front end.
"""
