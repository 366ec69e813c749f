"""Types of the C extension tunedgemm/_streamcopy.c."""

def copy_2d(dst: int, dst_pitch: int, src: int, src_pitch: int, row_bytes: int,
            rows: int, /) -> None: ...  # fmt: skip
