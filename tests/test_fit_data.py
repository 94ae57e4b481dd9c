"""``ldpsim fit``'s data files: one rule for numbers, messages that keep data out of logs, and hostile files.

Every test here reads a file through :func:`ldpsim.fit.read.read_table` (or the checks beside
it) and asserts the one-line refusal, or that a file a careful user would write is read as meant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpsim
from ldpsim.fit.read import check_design, parse_number, read_table


def _write(path, text, encoding="utf-8"):
    path.write_text(text, encoding=encoding)
    return path


def _rows(n=40, seed=0):
    g = np.random.default_rng(seed)
    return "".join(f"{a!r},{b!r}\n" for a, b in zip(g.normal(size=n).tolist(), g.normal(size=n).tolist()))


@pytest.mark.parametrize("text, value", [
    ("1", 1.0), ("-2.5", -2.5), ("+.5", 0.5), ("5.", 5.0), ("1e-3", 1e-3), ("1E+3", 1000.0), (" 7 ", 7.0),
    ("inf", np.inf), ("-Infinity", -np.inf), ("1e999", np.inf),
])
def test_decimal_numbers_are_read(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["1_000", "0x1p3", "1,5", "", " ", "--1", "1e", "e5", ".", "1.2.3", "\u0661\u0662",
                                  "\uff11", "1 000", "0b11", "1j"])
def test_other_spellings_of_numbers_are_refused(text):
    # float() reads '1_000' as 1000 and Arabic-Indic or full-width digits as numbers, but refuses hex: fit has one
    # rule, the decimal notation spreadsheets write
    with pytest.raises(ValueError, match="is not a decimal number"):
        parse_number(text)


@pytest.mark.parametrize("cell", ["1_000", "0x1p3", "\u0661\u0662"])
def test_a_cell_in_another_notation_is_refused_in_one_line(tmp_path, cell):
    data = _write(tmp_path / "d.csv", "y,a\n" + _rows() + f"1,{cell}\n")
    with pytest.raises(ldpsim.ConfigError, match=r"^column 'a' of d\.csv has a value that is not a decimal number "
                                                 r".*\(--show-values shows where\)$") as info:
        read_table(data, "y", None, "linear")
    assert cell not in str(info.value) and "row" not in str(info.value)


def test_messages_leave_data_values_out_unless_asked(tmp_path):
    data = _write(tmp_path / "d.csv", "y,a\n" + _rows() + "1,secret42\n")
    with pytest.raises(ldpsim.ConfigError) as hidden:
        read_table(data, "y", None, "linear")
    assert "secret42" not in str(hidden.value) and "row 42" not in str(hidden.value)
    with pytest.raises(ldpsim.ConfigError, match=r"has a value that is not .* 'secret42' in row 42$"):
        read_table(data, "y", None, "linear", show_values=True)


def test_a_constant_column_and_a_bad_logistic_response_keep_their_values_out(tmp_path):
    constant = _write(tmp_path / "c.csv", "y,a\n" + "".join(f"{i},31337\n" for i in range(30)))
    with pytest.raises(ldpsim.ConfigError, match=r"^column 'a' is constant \(one value in every row\)") as info:
        read_table(constant, "y", None, "linear")
    assert "31337" not in str(info.value)
    with pytest.raises(ldpsim.ConfigError, match=r"\(31337 in every row\)"):
        read_table(constant, "y", None, "linear", show_values=True)
    logistic = _write(tmp_path / "l.csv", "y,a\n" + "".join(f"{i % 2},{i}\n" for i in range(30)) + "7,1\n")
    with pytest.raises(ldpsim.ConfigError, match=r"^response 'y' must be 0 or 1 for the logistic model; 1 rows are "
                                                 r"not \(--show-values shows the first\)$"):
        read_table(logistic, "y", None, "logistic")
    with pytest.raises(ldpsim.ConfigError, match=r"; row 32 has 7$"):
        read_table(logistic, "y", None, "logistic", show_values=True)


def test_a_file_without_a_header_is_refused_without_echoing_its_first_row(tmp_path):
    data = _write(tmp_path / "d.csv", "3.25,-1.5\n" + _rows())
    with pytest.raises(ldpsim.ConfigError, match=r"^the first row of d\.csv holds only numbers: it must be the "
                                                 r"header \(the column names\); add one$") as info:
        read_table(data, "y", None, "linear")
    assert "3.25" not in str(info.value)
    # a header with a number-like name among others is still listed only on request
    mixed = _write(tmp_path / "m.csv", "Smith,3.25\n" + _rows())
    with pytest.raises(ldpsim.ConfigError, match=r"^response = 'y' is not a column of m\.csv, whose header has 1 "
                                                 r"number-like names") as info:
        read_table(mixed, "y", None, "linear")
    assert "Smith" not in str(info.value)


def test_numeric_column_names_are_fine_when_the_response_is_among_them(tmp_path):
    data = _write(tmp_path / "d.csv", "2019,2020\n" + _rows())
    names, X, y = read_table(data, "2019", None, "linear")
    assert names == ["2020"] and X.shape == (40, 1)


@pytest.mark.parametrize("sep, name", [(";", "';'"), ("\t", "tabs")])
def test_a_file_separated_by_something_else_says_so(tmp_path, sep, name):
    data = _write(tmp_path / "d.csv", f"y{sep}a\n" + _rows().replace(",", sep))
    with pytest.raises(ldpsim.ConfigError, match=rf"^d\.csv seems separated by {name}, not commas"):
        read_table(data, "y", None, "linear")


def test_blank_lines_and_rows_of_empty_fields_are_not_rows(tmp_path):
    # a trailing newline too many, and the ',,' rows a spreadsheet writes below its data
    data = _write(tmp_path / "d.csv", "y,a\n" + _rows() + "\n\n,\n , \n")
    names, X, y = read_table(data, "y", None, "linear")
    assert X.shape == (40, 1)


def test_a_row_with_another_number_of_fields_is_refused_without_its_row(tmp_path):
    data = _write(tmp_path / "d.csv", "y,a\n" + _rows() + '1,"Smith, J.",3\n')
    with pytest.raises(ldpsim.ConfigError, match=r"^a row of d\.csv has 3 fields, the header 2 \(a comma inside an "
                                                 r"unquoted value\?\) \(--show-values shows where\)$"):
        read_table(data, "y", None, "linear")
    with pytest.raises(ldpsim.ConfigError, match=r"^row 42 of d\.csv has 3 fields"):
        read_table(data, "y", None, "linear", show_values=True)


def test_a_column_without_a_name_is_refused(tmp_path):
    data = _write(tmp_path / "d.csv", "y,,b\n" + "".join(f"{i},{i * i % 7},{i % 5}\n" for i in range(40)))
    with pytest.raises(ldpsim.ConfigError, match=r"^column 2 of d\.csv has no name in the header: name it$"):
        read_table(data, "y", None, "linear")


@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_a_file_that_is_not_utf8_is_refused_without_its_bytes(tmp_path, encoding):
    # the codec's own message quotes the offending byte and where it is
    data = _write(tmp_path / "d.csv", "y,caf\u00e9\n" + _rows(), encoding=encoding)
    with pytest.raises(ldpsim.ConfigError, match=r"^data file '.*d\.csv' is not UTF-8 text \(save it as CSV "
                                                 r"UTF-8\)$") as info:
        read_table(data, "y", None, "linear")
    assert "byte" not in str(info.value) and "position" not in str(info.value)


def test_a_covariate_spanning_the_doubles_is_not_called_collinear():
    # its range overflowed to inf, the standardised column became NaN and scipy's QR raised
    g = np.random.default_rng(1)
    x = np.concatenate([g.normal(1e308, 1e307, 100), g.normal(-1e308, 1e307, 100)])
    X = np.column_stack([x, g.normal(size=200)])
    check_design(["wide", "z"], X, g.normal(size=200), "linear")  # no error
    with pytest.raises(ldpsim.ConfigError, match="exactly collinear"):
        check_design(["wide", "twice"], np.column_stack([x, x / 2]), g.normal(size=200), "linear")


# --- the private scaling (ldpsim/privacy/scaling.py) ---------------------------------------------------------

from ldpsim.privacy import scaling as sc  # noqa: E402

#: Noise SD per count of three columns at (epsilon 3, delta 1e-5) with the default scaling share 0.1.
NOISE_SD = sc.histogram_noise_sd(3, 0.2274)


@pytest.mark.parametrize("make", [
    lambda g: g.normal(0, 1, 2000),
    lambda g: g.normal(0, 1, 2000) + 1e9,            # x1 + 1e9 fell into one histogram bin
    lambda g: g.normal(1.7e9, 3e7, 2000),            # timestamps
    lambda g: np.exp(g.normal(10, 1, 2000)),         # incomes
    lambda g: g.exponential(3, 2000),
    lambda g: g.normal(1e300, 1e299, 2000),          # beyond 2^500, the old grid's end
    lambda g: g.normal(2.0 ** 600, 2.0 ** 590, 2000),
    lambda g: g.normal(-1e-300, 1e-301, 2000),
    lambda g: g.normal(0, 1e-50, 2000),              # below 2^-40, the old grid's middle bin
    lambda g: (g.random(2000) < 0.3).astype(float),  # binary
    lambda g: g.integers(1, 6, 2000).astype(float),
])
def test_the_private_scaling_puts_any_column_near_the_unit_box(make):
    # the scaled column must be O(1) for DP-SGD's clip and step size: |mean| < 1.5 and SD in [0.25, 4] (the
    # spread is read from bins 8 wide, so a factor up to about 3 either way is by design); fixed seeds
    g = np.random.default_rng(7)
    x = make(g)
    scale = sc.private_scaling("x", x, NOISE_SD, g)
    with np.errstate(over="ignore"):
        z = scale.apply(x)
    assert np.isfinite(z).all()
    assert abs(z.mean()) < 1.5 and 0.25 <= z.std() <= 4.0, (scale, z.mean(), z.std())
    assert np.mean(np.abs(z) >= sc.MARGIN) < 0.01  # the clipped share


def test_a_column_spanning_the_doubles_is_scaled_without_overflow():
    # two modes at +-1.5e308: its SD is beyond the doubles' reach as a scale (the scale stops at a quarter of
    # the largest double), so only finiteness and the box are asked
    g = np.random.default_rng(7)
    x = np.concatenate([g.normal(1.5e308, 1e307, 1000), g.normal(-1.5e308, 1e307, 1000)])
    with np.errstate(over="raise"):
        z = sc.private_scaling("x", x, NOISE_SD, g).apply(x)
    assert np.isfinite(z).all() and np.abs(z).max() <= sc.MARGIN and z.std() > 1


def test_the_location_histogram_has_the_law_of_the_dense_one():
    # the empty bins' noise is drawn lazily; the thresholded result must have the law of the dense histogram.
    # With ALPHA raised so that an empty bin passes with p = 0.2, in 3000 draws of a 50-bin histogram with 5
    # occupied bins: the mean number of empty bins passing is 45 p = 9 (SD per draw 2.68, SE 0.049): within 4
    # SEs; their values against the normal tail beyond the threshold and their places against uniform on the
    # empty bins: KS and chi-square p-values above 1e-4 (each fails 1e-4 of the time on a correct tree)
    from scipy import special, stats

    bins, s, draws = 50, 3.0, 3000
    index = np.repeat(np.arange(0, 50, 10), 40)  # bins 0, 10, ..., 40 hold 40 each
    old = sc.ALPHA
    sc.ALPHA = 0.2 * bins
    try:
        level = sc.threshold(bins)
        g = np.random.default_rng(11)
        passing, values, places = [], [], []
        for _ in range(draws):
            where, noisy = sc._sparse_noisy(index, bins, s, g)
            empty = where % 10 != 0
            passing.append(int(empty.sum()))
            values.extend((noisy[empty] / s).tolist())
            places.extend(where[empty].tolist())
            assert set(where[~empty].tolist()) == {0, 10, 20, 30, 40}  # 40 counts stand 13 SDs above
    finally:
        sc.ALPHA = old
    assert abs(level - (-special.ndtri(0.2))) < 1e-12
    assert abs(np.mean(passing) - 45 * 0.2) < 4 * math.sqrt(45 * 0.2 * 0.8 / draws)
    tail = stats.truncnorm(level, np.inf)
    assert stats.kstest(values, tail.cdf).pvalue > 1e-4
    counts = np.bincount(places, minlength=bins)[np.arange(bins) % 10 != 0]
    assert stats.chisquare(counts).pvalue > 1e-4


def test_replacing_one_row_moves_one_count_down_and_one_up_in_each_histogram():
    # the sensitivity sqrt 2 of the module docstring, for the magnitudes, the pair differences (one permutation,
    # public coins) and the location bins
    g = np.random.default_rng(3)
    x = g.normal(5, 2, 501)
    for i in (0, 250, 500):
        y = x.copy()
        y[i] = -1e12
        perm = g.permutation(501)
        mag = lambda v: np.bincount(sc._magnitude_index(v), minlength=sc.MAG_BINS)  # noqa: E731
        half = lambda v: v[perm[0:500:2]] / 2 - v[perm[1:500:2]] / 2  # noqa: E731
        loc = lambda v: np.bincount(np.clip((v + 20) // 4, 0, 9).astype(int), minlength=10)  # noqa: E731
        for counts in (lambda v: mag(v), lambda v: mag(half(v)), loc):
            change = counts(y).astype(float) - counts(x)
            assert np.abs(change).sum() <= 2 and np.linalg.norm(change) <= math.sqrt(2)


def test_the_private_scaling_says_why_it_failed_without_a_value():
    g = np.random.default_rng(5)
    with pytest.raises(sc.ScalingFailed, match="^its magnitude histogram has no count above the noise$"):
        sc.private_scaling("x", g.normal(size=50), NOISE_SD, g)
    almost = np.full(2000, 41.5)
    almost[:30] = g.normal(size=30)
    with pytest.raises(sc.ScalingFailed, match="^nearly every pair of its rows is equal"):
        sc.private_scaling("x", almost, NOISE_SD, g)


def test_rows_needed_is_what_a_normal_column_needs():
    # public: from the noise alone. At n = rows_needed a normal column of any location and scale is scaled in
    # 99% of draws (measured: 297 of 300 at three budgets); here 100 draws must fail at most 8 times (binomial
    # with p = 0.01: P(more than 8) < 1e-5), and at a third of it most draws fail
    need = sc.rows_needed(NOISE_SD)
    assert 400 < need < 600  # 493: (5.13 + 2) x 18.7 / 0.27

    def failures(n):
        out = 0
        for r in range(100):
            g = np.random.default_rng(1000 + r)
            x = g.normal(g.uniform(-5, 5) * 10 ** g.uniform(-3, 3), 10 ** g.uniform(-3, 3), n)
            try:
                sc.private_scaling("x", x, NOISE_SD, g)
            except sc.ScalingFailed:
                out += 1
        return out

    assert failures(need) <= 8
    assert failures(need // 3) >= 50
