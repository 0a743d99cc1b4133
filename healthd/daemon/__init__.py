"""The sidecar daemon: `healthd run`.

One module per concern: :mod:`scheduler` (cron expressions, APScheduler), :mod:`state` (the
SQLite state file), :mod:`runner` (one run: pull, replay, score, export), :mod:`server` (the
HTTP endpoints), :mod:`app` (wiring, signals).
"""
