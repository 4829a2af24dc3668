"""What a run remembers: its records, the run over a store, the stores, and the ledger.

The pipeline, the gateway and the console enter here: a record and its pure readings
(``CallRecord`` and the functions that judge one), its JSON form's parts the engines carry,
the run (``Run``: load, claim, lease, answer, remember), and ``update``, the one
compare-and-swap every change of a record goes through. The application's operations on
runs are [`toolwire.ledger`][] (this package's ``ledger`` module); the stores are
[`toolwire.store`][].
"""

# What the pipeline, the gateway and the console share of the run (not public API).
from toolwire.runs._record import HOST as HOST
from toolwire.runs._record import CallRecord
from toolwire.runs._record import awaits_input as awaits_input
from toolwire.runs._record import binding_for as binding_for
from toolwire.runs._record import caller_json as caller_json
from toolwire.runs._record import decided_for as decided_for
from toolwire.runs._record import expired as expired
from toolwire.runs._record import fingerprint as fingerprint
from toolwire.runs._record import held as held
from toolwire.runs._record import input_record as input_record
from toolwire.runs._record import input_resume as input_resume
from toolwire.runs._record import input_round as input_round
from toolwire.runs._record import interrupted_answer as interrupted_answer
from toolwire.runs._record import request_of as request_of
from toolwire.runs._record import request_record as request_record
from toolwire.runs._record import still_running_answer as still_running_answer
from toolwire.runs._record import valid_id as valid_id
from toolwire.runs._record_json import checked_result as checked_result
from toolwire.runs._record_json import checked_wake as checked_wake
from toolwire.runs._record_json import decode_result as decode_result
from toolwire.runs._record_json import encode_result as encode_result
from toolwire.runs._run import UNSTORED_KINDS as UNSTORED_KINDS
from toolwire.runs._run import UNTIMED_WAIT as UNTIMED_WAIT
from toolwire.runs._run import Contended as Contended
from toolwire.runs._run import Keep, Run, update
from toolwire.runs._run import check_outlives as check_outlives

__all__ = ["CallRecord", "Keep", "Run", "update"]
