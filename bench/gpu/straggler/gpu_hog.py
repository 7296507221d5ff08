"""Another user's program on one GPU: back-to-back 4096^3 bf16 matrix
products on --device for --seconds (or until SIGTERM), after --after seconds.
Prints `HOG_ONSET <unix s>` when the products begin and `HOG_END <unix s>`."""
import argparse
import signal
import sys
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--device", type=int, required=True)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--after", type=float, default=0)
    a = p.parse_args()
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    dev = torch.device("cuda", a.device)
    x = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    y = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    torch.cuda.synchronize(dev)
    time.sleep(a.after)
    print("HOG_ONSET %.3f" % time.time(), flush=True)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end and not stop:
        for _ in range(50):
            z = x @ y
        torch.cuda.synchronize(dev)
    print("HOG_END %.3f" % time.time(), flush=True)
    del z
    return 0


if __name__ == "__main__":
    sys.exit(main())
