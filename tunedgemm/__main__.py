"""Command line: python -m tunedgemm {info,doctor,demo,verify,crossover}."""

from __future__ import annotations

import argparse
import sys


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse turns the error into usage)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive size")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tunedgemm", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="backend in use and why, GPU, versions, kernel choice")
    sub.add_parser("doctor", help="check the CUDA toolkit, driver, PyCUDA, scikit-cuda and the "
                   "C extension one by one, and say what to do")  # fmt: skip
    demo = sub.add_parser("demo", help="run and check sgemm/dgemm on random matrices")
    demo.add_argument(
        "--size",
        type=positive_int,
        nargs="+",
        default=None,
        help="square sizes to run (default: 1024 4096 on a GPU, 512 1024 on NumPy)",
    )
    verify = sub.add_parser("verify", help="error vs cuBLAS and vs a float64 reference")
    verify.add_argument("--quick", action="store_true", help="fewer shapes")
    cross = sub.add_parser("crossover", help="measure where NumPy beats the GPU for host calls")
    cross.add_argument("--out", help="file to write (default: crossover.json in the user's "
                       "cache directory, ~/.cache/tunedgemm on Linux, which lookups read first)")
    args = parser.parse_args(argv)

    if args.command == "info":
        from .info import format_info, info

        print(format_info(info()))
        return 0
    if args.command == "doctor":
        from .doctor import doctor

        return doctor()
    if args.command == "demo":
        from .demo import demo as run_demo

        return run_demo(args.size)
    if args.command == "crossover":
        from .crossover import main as run_crossover

        command = " ".join(["python -m tunedgemm", *(argv if argv is not None else sys.argv[1:])])
        return run_crossover(args.out, command)
    from .verify import verify as run_verify

    return run_verify(quick=args.quick)


if __name__ == "__main__":
    sys.exit(main())
