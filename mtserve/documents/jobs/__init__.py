"""Translating parsed documents: in process, or as background jobs with records that outlive a restart.

- ``runner``: a ``Document`` translated through the shared TranslationService, chunk by chunk,
  at background priority (``mtserve translate-file`` calls it directly).
- ``store``: the job store the API uses: uploads, the queue, progress, cancellation, results,
  expiry, and who may see a job.
- ``records``: each job's record in SQLite under ``$MTSERVE_HOME``, and which process owns it.
- ``sandbox``: files read and rendered in worker processes under memory, CPU and time limits
  (translation-memory files too).
"""
