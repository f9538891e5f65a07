"""Remote records, read and written: the layer both ``publish`` and ``reproduce`` (and ``verify``) stand on.

* :mod:`.gitrecords` reads and builds commits on the records ref (default ``refs/heads/cotk-repro-records``)
  with git plumbing and a temporary index, so the user's branches, index and work tree are never touched;
* :mod:`.dashboard` is the HTTP client of the dashboard API (retries, backoff, timeouts);
* :mod:`.signatures` checks a published record's ``record.sig`` (SSHSIG), offline.
"""
