#!/usr/bin/env python3
"""Runs a command and judges it by its exit status and its output, for
ctest entries (ctest's PASS_REGULAR_EXPRESSION ignores the exit status, so a
rank that crashed after printing its success line would pass).

    run_expect.py [--status N | --nonzero] [--match REGEX ...]
                  [--no-match REGEX ...] -- COMMAND ARGS...

Passes (exit 0) only when the command's exit status is N (default 0), or
non-zero with --nonzero, and its combined stdout and stderr match every
--match and no --no-match (Python regular expressions, searched). Prints
the command's output, then what did not hold; exits 1 otherwise."""
import argparse
import re
import subprocess
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--status", type=int, default=0)
    ap.add_argument("--nonzero", action="store_true")
    ap.add_argument("--match", action="append", default=[])
    ap.add_argument("--no-match", action="append", default=[])
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        sys.exit("run_expect.py: no command")
    proc = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    sys.stdout.write(proc.stdout)
    problems = []
    if args.nonzero and proc.returncode == 0:
        problems.append("exit status 0, expected a non-zero one")
    if not args.nonzero and proc.returncode != args.status:
        problems.append(f"exit status {proc.returncode}, expected "
                        f"{args.status}")
    problems += [f"no match for {p!r}" for p in args.match
                 if not re.search(p, proc.stdout)]
    problems += [f"unexpected match for {p!r}" for p in args.no_match
                 if re.search(p, proc.stdout)]
    for problem in problems:
        print(f"run_expect.py: {problem}")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
