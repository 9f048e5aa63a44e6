"""Fuzz `pgs.load_svmlight` against scikit-learn's reader, in crash-proof subprocess batches.

Each case is a random svmlight file (mostly well formed; 70% then mutated by byte
flips, insertions, deletions, duplications or a truncation), plain or .gz / .bz2 / .xz
(30% of the compressed ones with a damaged stream), read with random options
(zero_based, query_id, multilabel, 1-3 threads, blocks of 1 byte to the default).
Every case must be read exactly as scikit-learn reads it, or be rejected with a
ValueError / OSError naming the file and the line (tests/svmlight_oracle.py). Cases
run in batches in child processes, so a crash (a signal) is caught: its input is
saved to --out-dir and the run goes on after it. Mismatches with scikit-learn are
counted by kind and their first inputs saved too.

A campaign, not a test (pytest does not collect this file; tests/test_svmlight_fuzz.py
runs the same generator and check on about a thousand cases). With pgs installed::

    python tests/fuzz_svmlight.py [--cases 100000] [--batch 5000] [--seed 0] [--jobs 2]
                                  [--out-dir DIR]

prints the counts, the mismatches by kind and pgs's rejections by reason, and exits 1 on
a crash or a broken contract. 100,000 cases take about 15 minutes on 2 cores.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent  # tests/, where svmlight_oracle.py is
OUT_DIR = os.path.join(tempfile.gettempdir(), "pgs-fuzz")
SAVED_PER_KIND = 5  # inputs kept for each kind of mismatch
HANG_SECONDS = 900  # a batch taking longer has hung


def case_rng(seed, i):
    return random.Random(seed * 1_000_003 + i)


def run_cases(seed, start, stop, work, out_dir):
    """Worker: run cases [start, stop); print one JSON summary line.

    Before each case, its index goes to work/current and its input to work/, so the
    parent can save the input of a case that kills this process.
    """
    sys.path.append(str(HERE))
    import svmlight_oracle as oracle

    outcomes, reasons, examples = Counter(), Counter(), {}
    os.makedirs(work, exist_ok=True)
    current = os.path.join(work, "current")
    for i in range(start, stop):
        raw, ext, text, kw, size = oracle.random_case(case_rng(seed, i))
        path = os.path.join(work, f"case{ext if ext else '.svm'}")
        with open(path, "wb") as fh:
            fh.write(raw)
        with open(current, "w") as fh:
            json.dump(dict(case=i, path=path, kw=kw, block=size), fh)
        try:
            outcome, detail = oracle.check(path, ext, text, kw, size)
        except oracle.ContractError as exc:
            outcome, detail = "contract broken", str(exc)
        outcomes[outcome] += 1
        if outcome not in ("same", "both reject", "damaged stream"):
            why = oracle.reason(outcome, detail)
            reasons[f"{outcome}: {why}"] += 1
            if outcome != "pgs rejects" and reasons[f"{outcome}: {why}"] <= SAVED_PER_KIND:
                save_input(out_dir, f"{outcome.replace(' ', '_')}-{i}", path, kw, size,
                           detail)
                examples.setdefault(f"{outcome}: {why}", i)
    print(json.dumps(dict(outcomes=outcomes, reasons=reasons, examples=examples)))


def save_input(out_dir, name, path, kw, size, detail=""):
    os.makedirs(out_dir, exist_ok=True)
    dest = os.path.join(out_dir, name + os.path.splitext(path)[1])
    shutil.copyfile(path, dest)
    with open(dest + ".json", "w") as fh:
        json.dump(dict(kw=kw, block=size, detail=detail), fh)


def run_batch(seed, start, stop, work, out_dir):
    """Run [start, stop) in child processes, restarting after any case that crashes."""
    outcomes, reasons, examples, crashes = Counter(), Counter(), {}, []
    while start < stop:
        try:
            proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--worker",
                                   str(seed), str(start), str(stop), work, out_dir],
                                  capture_output=True, text=True, cwd=HERE,
                                  timeout=HANG_SECONDS)
        except subprocess.TimeoutExpired as exc:  # a hang: blamed on the current case
            proc = subprocess.CompletedProcess(exc.cmd, "timeout", "", str(exc.stderr))
        lines = proc.stdout.strip().splitlines()
        if proc.returncode == 0 and lines:
            res = json.loads(lines[-1])
            outcomes.update(res["outcomes"])
            reasons.update(res["reasons"])
            examples.update(res["examples"])
            break
        # The child died: the case in work/current is the culprit; save it, go on after.
        with open(os.path.join(work, "current")) as fh:
            cur = json.load(fh)
        save_input(out_dir, f"crash-{cur['case']}", cur["path"], cur["kw"], cur["block"],
                   f"exit status {proc.returncode}: {proc.stderr[-2000:]}")
        crashes.append((cur["case"], proc.returncode))
        outcomes["crash"] += 1
        # the cases before it ran but their counts died with the child: run them again
        if cur["case"] > start:
            sub = run_batch(seed, start, cur["case"], work, out_dir)
            outcomes.update(sub["outcomes"])
            reasons.update(sub["reasons"])
            examples.update(sub["examples"])
            crashes += sub["crashes"]
        start = cur["case"] + 1
    return dict(outcomes=outcomes, reasons=reasons, examples=examples, crashes=crashes)


def fuzz(cases, batch, seed, jobs, out_dir):
    """Run `cases` cases in batches on `jobs` parallel children; the merged counts."""
    work_root = os.path.join(out_dir, "work")
    spans = [(s, min(cases, s + batch)) for s in range(0, cases, batch)]
    total = dict(outcomes=Counter(), reasons=Counter(), examples={}, crashes=[])
    t0 = time.perf_counter()

    def one(k):
        s, e = spans[k]
        work = os.path.join(work_root, str(k))  # one per batch: batches run in parallel
        res = run_batch(seed, s, e, work, out_dir)
        shutil.rmtree(work, ignore_errors=True)
        return res

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for res in pool.map(one, range(len(spans))):
            for key in ("outcomes", "reasons"):
                total[key].update(res[key])
            total["examples"].update(res["examples"])
            total["crashes"] += res["crashes"]
            n = sum(total["outcomes"].values())
            print(f"  {n:,} cases, {total['outcomes']['crash']} crashes, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
    shutil.rmtree(work_root, ignore_errors=True)
    total["seconds"] = time.perf_counter() - t0
    return total


MISMATCHES = ("only pgs accepts", "different", "only pgs reads a damaged stream",
              "only pgs rejects a stream")


def markdown_table(header, rows):
    lines = [header, ["---"] * len(header), *rows]
    return "\n".join("| " + " | ".join(map(str, row)) + " |" for row in lines)


def summary_tables(total, cases, seed):
    """Markdown: the counts, the mismatches by kind, pgs's rejections by reason."""
    o = total["outcomes"]
    mism = sum(o[k] for k in MISMATCHES)
    rows = [["cases", f"{cases:,}"], ["crashes (signals)", f"{o['crash']:,}"],
            ["contract broken (wrong exception type or message)", f"{o['contract broken']:,}"],
            ["read as scikit-learn reads them", f"{o['same']:,}"],
            ["rejected by both", f"{o['both reject']:,}"],
            ["damaged compressed streams, rejected", f"{o['damaged stream']:,}"],
            ["rejected by pgs only (a ValueError naming the line)", f"{o['pgs rejects']:,}"],
            ["mismatches with scikit-learn (accepted by pgs only, or read differently)",
             f"{mism:,}"],
            ["seconds", f"{total['seconds']:.0f}"], ["seed", str(seed)]]
    counts = markdown_table(["", "count"], rows)
    kinds = [[k, f"{v:,}", str(total["examples"].get(k, ""))]
             for k, v in total["reasons"].most_common() if not k.startswith("pgs rejects")]
    rejects = [[k.split(": ", 1)[1], f"{v:,}"] for k, v in total["reasons"].most_common()
               if k.startswith("pgs rejects")]
    return counts, (markdown_table(["kind", "count", "first case"], kinds) if kinds
                    else "None."), markdown_table(["pgs's message", "count"], rejects[:25])


def main(argv=None):
    """Parse the command line, run the cases and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=5_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out-dir", default=OUT_DIR,
                    help="where the inputs of crashes and mismatches are saved")
    args = ap.parse_args(argv)
    total = fuzz(args.cases, args.batch, args.seed, args.jobs, args.out_dir)
    for table in summary_tables(total, args.cases, args.seed):
        print(table + "\n")
    print(f"Inputs of crashes and mismatches, if any: {args.out_dir}")
    return 1 if total["outcomes"]["crash"] or total["outcomes"]["contract broken"] else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        seed, start, stop, work, out_dir = sys.argv[2:7]
        run_cases(int(seed), int(start), int(stop), work, out_dir)
    else:
        sys.exit(main())
