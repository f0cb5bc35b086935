"""Front end, reports: a campaign's results as text for people and as HTML.

In: :class:`~fuzzkern.search.engine.TargetResult` and failures. Out: the failure diagnosis
(:func:`fuzzkern.report.text.failure_text`), summary rows, and a self-contained HTML page
(:mod:`fuzzkern.report.html`).
"""
