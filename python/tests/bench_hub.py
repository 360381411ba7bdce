"""Benchmarks of the Python client, run by the Go benchmark BenchmarkHub
(cmd/oetp hub_bench_test.go) against a real hub: prints one JSON object.

    python3 bench_hub.py single N        N single reads
    python3 bench_hub.py batch N         N batches of 1,000 reads
    python3 bench_hub.py write_block N   N write_block calls of 64 MiB at 0x1000000
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import oetp  # noqa: E402


def main():
    mode, n = sys.argv[1], int(sys.argv[2])
    dev = oetp.connect().device(os.environ.get("OETP_TEST_DEVICE", "board1"))
    dev.read(0)
    ops = 0
    if mode == "single":
        read = dev.read
        t0 = time.perf_counter()
        for _ in range(n):
            read(0x10)
        dt = time.perf_counter() - t0
        ops = n
    elif mode == "batch":
        t0 = time.perf_counter()
        for _ in range(n):
            with dev.batch() as b:
                for i in range(1000):
                    b.read(4 * (i % 256))
        dt = time.perf_counter() - t0
        ops = 1000 * n
    elif mode == "write_block":
        data = os.urandom(64 << 20)
        t0 = time.perf_counter()
        for _ in range(n):
            dev.write_block(0x1000000, data)
        dt = time.perf_counter() - t0
        ops = n
        back = dev.read_block(0x1000000, len(data))
        if back != data:
            raise SystemExit("write_block: read back differs")
    else:
        raise SystemExit("unknown mode " + mode)
    print(json.dumps({"mode": mode, "n": n, "ops": ops, "seconds": dt}))


if __name__ == "__main__":
    main()
