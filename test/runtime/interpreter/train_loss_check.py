"""Checks a `loom-run --train` log: the expected number of steps, numbered
1..N, finite losses, and last loss < ratio * first loss. Reads either the
text lines (`step n loss v tokens/s x`) or --json lines."""
import argparse
import json
import math
import sys


def read_losses(path):
    losses = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            if line.startswith("{"):
                obj = json.loads(line)
                step, loss = obj["step"], obj["loss"]
            else:
                # step N loss V [grad_norm G] tokens/s X flop/s Y [...]
                words = line.split()
                if len(words) < 8 or words[0] != "step" or \
                        words[2] != "loss" or "tokens/s" not in words or \
                        "flop/s" not in words:
                    sys.exit(f"unexpected line: {line!r}")
                step, loss = int(words[1]), float(words[3])
            if step != len(losses) + 1:
                sys.exit(f"step {step} out of order")
            losses.append(loss)
    return losses


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--ratio", type=float, required=True)
    args = parser.parse_args()
    losses = read_losses(args.log)
    if len(losses) != args.steps:
        sys.exit(f"{len(losses)} steps, expected {args.steps}")
    if not all(math.isfinite(l) for l in losses):
        sys.exit("non-finite loss")
    first, last = losses[0], losses[-1]
    print(f"first {first} last {last}")
    if not last < args.ratio * first:
        sys.exit(f"the loss fell from {first} to {last}, not below "
                 f"{args.ratio} * first")


if __name__ == "__main__":
    main()
