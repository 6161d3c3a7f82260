"""Hostile and malformed data files for the battery: every supported format, broken in the
ways files get broken (and forged). One of them carries a pickle that would create
``PWNED`` beside it if anything ever unpickled it."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.io

import fastmice
from fastmice.datasets import make_multiview_blobs

#: (file, what the one-line error must contain) for ``fastmice cluster FILE --k 3``.
FILE_CASES = [
    ("empty.npy", "is empty (0 bytes)"),
    ("truncated.npy", "holds less than its header declares"),
    ("garbage.npy", "is not a .npy file"),
    ("text.npy", "is not a .npy file: it does not start with NumPy's magic bytes (it holds text)"),
    ("object.npy", "holds Python objects (dtype object)"),
    ("huge.npy", "shape (1099511627776, 1048576) of float64"),
    ("one_d.npy", "must be 2-D"),
    ("three_d.npy", "must be 2-D"),
    ("strings.npy", "has dtype <U1"),
    ("nan.npy", "NaN or infinite values (first at row 3)"),
    ("inf.npy", "NaN or infinite values (first at row 4)"),
    ("zero_rows.npy", "has no samples"),
    ("zero_cols.npy", "has no features"),
    ("complex.npy", "has dtype complex128"),
    ("empty.npz", "is empty (0 bytes)"),
    ("truncated.npz", "is a damaged .npz archive"),
    ("garbage.npz", "is not an .npz archive"),
    ("wrongkeys.npz", "has no arrays named view0"),
    ("pickled.npz", "(member view0.npy) holds Python objects"),
    ("mismatch.npz", "has 50 samples; expected 60"),
    ("badlabels.npz", "labels have 10 entries but the views have 60 rows"),
    ("nan.npz", "NaN or infinite values"),
    ("empty.mat", "is empty (0 bytes)"),
    ("garbage.mat", "is not a readable MATLAB .mat file"),
    ("wrongkeys.mat", "has no view variable named X / fea / data"),
    ("truncated.mat", "truncated.mat"),
    ("empty.parquet", "is empty (0 bytes)"),
    ("garbage.parquet", "is not a Parquet file"),
    ("strings.parquet", "is not numeric (string); if it holds the sample ids"),
    ("nulls.parquet", "has 1 missing values"),
    ("empty.csv", "is empty (0 bytes)"),
    ("blank.csv", "is empty: no rows"),
    ("nan.csv", "NaN or infinite values"),
    ("inf.csv", "NaN or infinite values"),
    ("strings.csv", "could not convert string 'abc'"),
    ("ragged.csv", "the number of columns changed"),
    ("nonutf8.csv", "is not UTF-8 text: byte 0xff"),
    ("nul.csv", "has a NUL byte at offset"),
    ("noviews", "has no view files"),
    ("twoview0", "has two files for view 0"),
]


class _Pickled:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def write_hostile_files(folder: Path) -> dict[str, Path]:
    """Write every file of :data:`FILE_CASES` (and ``good.npz``, ``a.npy``, ``short.npy``)."""
    d = folder
    d.mkdir(parents=True, exist_ok=True)
    Xs, y = make_multiview_blobs(60, n_views=2, n_clusters=3, random_state=0)
    Xs = fastmice.check_views(Xs)
    evil = np.array([_Pickled(d / "PWNED"), 1], dtype=object)
    np.save(d / "a.npy", Xs[0])
    np.save(d / "short.npy", Xs[1][:40])
    good = (d / "a.npy").read_bytes()
    (d / "empty.npy").write_bytes(b"")
    (d / "truncated.npy").write_bytes(good[: len(good) // 2])
    (d / "garbage.npy").write_bytes(bytes(range(256)) * 2)
    (d / "text.npy").write_text("1,2,3\n4,5,6\n")
    np.save(d / "object.npy", evil, allow_pickle=True)
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (2**40, 2**20)})
    (d / "huge.npy").write_bytes(header.getvalue() + b"\0" * 64)
    np.save(d / "one_d.npy", Xs[0][:, 0])
    np.save(d / "three_d.npy", Xs[0][:, :4].reshape(60, 2, 2))
    np.save(d / "strings.npy", np.array([["a", "b"]] * 60))
    nan, inf = Xs[0].copy(), Xs[0].copy()
    nan[3, 1], inf[4, 0] = np.nan, np.inf
    np.save(d / "nan.npy", nan)
    np.save(d / "inf.npy", inf)
    np.save(d / "zero_rows.npy", np.zeros((0, 5)))
    np.save(d / "zero_cols.npy", np.zeros((60, 0)))
    np.save(d / "complex.npy", Xs[0].astype(complex))
    (d / "empty.npz").write_bytes(b"")
    np.savez(d / "good.npz", view0=Xs[0], view1=Xs[1], labels=y)
    archive = (d / "good.npz").read_bytes()
    (d / "truncated.npz").write_bytes(archive[: len(archive) // 2])
    (d / "garbage.npz").write_bytes(bytes(range(255, -1, -1)) * 2)
    np.savez(d / "wrongkeys.npz", X=Xs[0], Y=Xs[1])
    np.savez(d / "pickled.npz", view0=evil, view1=Xs[1])
    np.savez(d / "mismatch.npz", view0=Xs[0], view1=Xs[1][:50])
    np.savez(d / "badlabels.npz", view0=Xs[0], view1=Xs[1], labels=y[:10])
    np.savez(d / "nan.npz", view0=nan, view1=Xs[1])
    (d / "empty.mat").write_bytes(b"")
    (d / "garbage.mat").write_bytes(bytes(range(240, 256)) * 25)
    scipy.io.savemat(d / "wrongkeys.mat", {"foo": Xs[0]})
    cells = np.empty((1, 2), dtype=object)
    cells[0, 0], cells[0, 1] = Xs[0], Xs[1]
    scipy.io.savemat(d / "good.mat", {"X": cells, "Y": y})
    mat = (d / "good.mat").read_bytes()
    (d / "truncated.mat").write_bytes(mat[: len(mat) // 2])
    (d / "empty.parquet").write_bytes(b"")
    (d / "garbage.parquet").write_bytes(b"\x00\x01" * 200)
    pq.write_table(pa.table({"s": ["x"] * 60}), d / "strings.parquet")
    pq.write_table(pa.table({"a": [1.0] * 59 + [None], "b": [2.0] * 60}), d / "nulls.parquet")
    (d / "empty.csv").write_text("")
    (d / "blank.csv").write_text("\n  \n")
    (d / "nan.csv").write_text("1,2\nnan,3\n4,5\n")
    (d / "inf.csv").write_text("1,2\ninf,3\n4,5\n")
    (d / "strings.csv").write_text("1,2\nabc,3\n4,5\n")
    (d / "ragged.csv").write_text("1,2\n3\n4,5\n")
    (d / "nonutf8.csv").write_bytes(b"1,2\n\xff\xfe,3\n")
    (d / "nul.csv").write_bytes(b"1,2\n3\x00,4\n")
    (d / "noviews").mkdir(exist_ok=True)
    (d / "noviews" / "readme.txt").write_text("no views here")
    (d / "twoview0").mkdir(exist_ok=True)
    np.save(d / "twoview0" / "view0.npy", Xs[0])
    np.savez(d / "twoview0" / "view0.npz", a=Xs[0])
    return {"dir": d, "marker": d / "PWNED", "Xs": Xs, "y": y}
