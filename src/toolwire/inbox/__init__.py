"""The approval console: the calls waiting for a human, as web pages and a JSON API
(extra ``toolwire[inbox]``).

[`app`][] is an ASGI application to mount under a path of the host application's own;
``toolwire inbox --store URL`` serves it alone, on loopback, behind a random token.

Every request goes through ``authorize(request)``, which returns who the approver is (any
JSON value that names someone, kept as ``by`` on each decision) or None (401). Only a
non-empty identity gets in: None, True or False, an empty or blank string, 0, and an empty
container (or one holding only such values, like ``{"user": None}``) are a 401 too. Forms
carry a CSRF token bound to that identity (403 without it); the JSON API's ``POST`` needs the
``X-Toolwire-Inbox`` header, which a cross-site page cannot send. A decision is recorded only
for a call still ``pending`` (and, when given, at the version the approver saw): anything else
is a 409.

Routes (relative to where the app is mounted):

- ``GET /``: the pending requests, newest first, filterable by ``principal`` and ``tool``;
- ``GET /runs/{run_id}/calls/{call_id}``: one request, with its decision forms;
- ``GET /runs/{run_id}``: a run's history;
- ``GET /api/pending``, ``GET /api/runs/{run_id}``,
  ``POST /api/runs/{run_id}/calls/{call_id}/decision``: the same as JSON.
"""

from toolwire.inbox._asgi import Authorize, app
from toolwire.inbox._serve import serve

__all__ = ["Authorize", "app", "serve"]
