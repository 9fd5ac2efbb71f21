"""moto's S3 server on port 9000 whose buckets and objects survive a restart.

moto keeps its state in memory. Its recorder appends every request to a file; at start this
launcher replays that file (recording paused) before serving, then records on. The file lives
on the volume mounted at /data, as MinIO's objects would. A stand-in for the deployment check
only: the log grows with every request, and a multipart upload does not survive a restart (its
replayed parts name the upload id of the first run); the check's objects are single PUTs.
"""

import os
import signal
import threading
from pathlib import Path

RECORDING = Path(os.environ.get("S3_STATE_FILE", "/data/moto-recording.jsonl"))
os.environ["MOTO_RECORDER_FILEPATH"] = str(RECORDING)

from moto.moto_api import recorder  # noqa: E402  (reads the path above when imported)
from moto.moto_api._internal.recorder.models import Recorder  # noqa: E402
from moto.moto_server.threaded_moto_server import ThreadedMotoServer  # noqa: E402

PORT = 9000
REPLAY_PORT = 9001

# The server answers requests on several threads and the recorder appends each one with two
# unlocked writes: one lock keeps every request on its own line.
_record_lock = threading.Lock()
_record_request = Recorder._record_request


def _locked_record_request(self: Recorder, *args: object, **kwargs: object) -> None:
    with _record_lock:
        _record_request(self, *args, **kwargs)  # type: ignore[arg-type]


Recorder._record_request = _locked_record_request  # type: ignore[method-assign]


def main() -> None:
    if RECORDING.is_file() and RECORDING.stat().st_size:
        # Replayed into a private server first: the public port (and so the health check)
        # answers only once the state is back. moto's state is per process, not per server.
        replay = ThreadedMotoServer(ip_address="127.0.0.1", port=REPLAY_PORT, verbose=False)
        replay.start()
        recorder.replay_recording(target_host=f"http://127.0.0.1:{REPLAY_PORT}")
        replay.stop()
        print(f"replayed {sum(1 for _ in RECORDING.open())} requests from {RECORDING}", flush=True)
    server = ThreadedMotoServer(ip_address="0.0.0.0", port=PORT, verbose=False)
    server.start()
    recorder.start_recording()
    print(f"S3 (moto) serving on :{PORT}, state in {RECORDING}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
