"""moto's S3 server on port 9000 whose buckets and objects survive a restart.

moto keeps its state in memory. Its recorder appends every request to a file; at start this
launcher replays that file (recording paused) before serving, then records on. The file lives
on the volume mounted at /data, as MinIO's objects would.
"""

import os
import signal
import threading
from pathlib import Path

RECORDING = Path(os.environ.get("S3_STATE_FILE", "/data/moto-recording.jsonl"))
os.environ["MOTO_RECORDER_FILEPATH"] = str(RECORDING)

from moto.moto_api import recorder  # noqa: E402  (reads the path above when imported)
from moto.moto_server.threaded_moto_server import ThreadedMotoServer  # noqa: E402

PORT = 9000


def main() -> None:
    server = ThreadedMotoServer(ip_address="0.0.0.0", port=PORT, verbose=False)
    server.start()
    if RECORDING.is_file() and RECORDING.stat().st_size:
        recorder.replay_recording(target_host=f"http://127.0.0.1:{PORT}")
        print(f"replayed {sum(1 for _ in RECORDING.open())} requests from {RECORDING}", flush=True)
    recorder.start_recording()
    print(f"S3 (moto) serving on :{PORT}, state in {RECORDING}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.stop()


if __name__ == "__main__":
    main()
