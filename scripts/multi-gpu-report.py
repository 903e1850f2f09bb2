#!/usr/bin/env python3
"""The table of a multi-GPU plan's runs (scripts/multi-gpu-plan.sh) from the archives it leaves.

    python3 scripts/multi-gpu-report.py ARCHIVE.tgz...

Each archive holds the plan's state directory; its summary.txt has a line per step
(`== name: rc N, S s`) and the devices' busy-time lines. Prints, per archive, the GPUs, each
run's wall time on one GPU and on several with the speedup, and the busy time of every device in
the runs on several GPUs.
"""
import re
import sys
import tarfile


def main():
    for path in sys.argv[1:]:
        with tarfile.open(path) as tar:
            member = next(m for m in tar.getmembers() if m.name.endswith("/summary.txt"))
            text = tar.extractfile(member).read().decode()
        steps = {}
        for m in re.finditer(r"^== (\S+): rc (\d+), (\d+) s$", text, re.M):
            steps[m.group(1)] = (int(m.group(2)), int(m.group(3)))
        head = re.search(r"^SUMMARY multi-gpu \((.*)\)$", text, re.M)
        print(f"## {path}\n")
        print(f"GPUs: {head.group(1) if head else '?'}\n")
        print("| run | GPUs | one GPU s | several GPUs s | speedup | exit status (one / several) |")
        print("|---|---:|---:|---:|---:|---|")
        for run in ["gemm", "mixed", "exhaustive", "cover"]:
            one = steps.get(f"{run}-1")
            for n in (2, 4):
                many = steps.get(f"{run}-{n}")
                if not one or not many:
                    continue
                print(f"| {run} | {n} | {one[1]} | {many[1]} | {one[1] / many[1]:.2f}x "
                      f"| {one[0]} / {many[0]} |")
        if "two-nodes" in steps:
            rc, s = steps["two-nodes"]
            print(f"\ntwo-nodes recipe (two processes, one GPU each, then merge): exit {rc}, {s} s")
        # A plan called twice on one machine prints its summary twice: the last one holds all.
        last = text[text.rfind("SUMMARY multi-gpu"):]
        busy = re.findall(r"^SUMMARY busy (\S+): (device .*)$", last, re.M)
        if busy:
            print("\n| run | device busy time |\n|---|---|")
            for run, line in busy:
                print(f"| {run} | {line} |")
        print()


if __name__ == "__main__":
    main()
