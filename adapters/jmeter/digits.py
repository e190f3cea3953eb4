"""Whole numbers out of CSV bytes for all rows at once, with numpy.

A field of up to 8 digits is read as one unaligned 64-bit word (the 8 bytes that end
where the field ends), the bytes before the field are replaced by '0' and the word is
turned into its value with three multiply-and-shift steps (the "SWAR" technique): the
same dozen array operations whatever the width. Up to 16 digits take two words. The
short columns of a row (elapsed, code, bytes, latency...) are read together, as one
(rows x columns) array: one pass of each step for all of them, in row order, which is
the order of their bytes in memory."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

_ZEROS = np.uint64(0x3030303030303030)  # eight '0'
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW = np.uint64(0x000000FF000000FF)
_HIGH_BITS = np.uint64(0x8080808080808080)
_OVER_9 = np.uint64(0x4646464646464646)  # 0x80 - ':' in every byte
_POW10 = 10 ** np.arange(19, dtype=np.int64)
MAX_WIDTH = 18
_NL = 10
# By a field's width (0 to 8, 9: wider): the bytes of its word to keep, and what the others
# become ('0', so that they add nothing). An empty or too wide field becomes 0xFF bytes, which
# are no digits: such a row is bad by the same test as a letter in it.
_MASKS = [(0, 0xFFFFFFFFFFFFFFFF)] + [((0xFFFFFFFFFFFFFFFF << (8 * (8 - w))) & 0xFFFFFFFFFFFFFFFF,
                                        0x3030303030303030 & ~(0xFFFFFFFFFFFFFFFF << (8 * (8 - w))))
                                       for w in range(1, 9)] + [(0, 0xFFFFFFFFFFFFFFFF)]
_KEEP = np.array([keep for keep, _ in _MASKS], np.uint64)
_FILL = np.array([fill for _, fill in _MASKS], np.uint64)
# The same for 32-bit words (widths 0 to 4).
_KEEP32 = np.array([keep >> 32 for keep, _ in _MASKS[:5]], np.uint32)
_FILL32 = np.array([fill >> 32 for _, fill in _MASKS[:5]], np.uint32)
_ZEROS32, _OVER_9_32, _HIGH_BITS32 = np.uint32(0x30303030), np.uint32(0x46464646), np.uint32(0x80808080)
_LOW32 = np.uint32(0x00FF00FF)


class Block:
    """Bytes [a, b) of `data`: `seg` byte by byte, `words` as the 64-bit word at each offset."""

    def __init__(self, data: bytes, a: int, b: int) -> None:
        self.seg = np.frombuffer(data, np.uint8, b - a, a)
        self.size = b - a
        # Offsets past size-8 have no whole word; fields there fall back to digit by digit.
        self.words = np.ndarray((max(self.size - 7, 0),), dtype="<u8", buffer=data, offset=a, strides=(1,))
        self.words32 = np.ndarray((max(self.size - 3, 0),), dtype="<u4", buffer=data, offset=a, strides=(1,))

    def fields(self, k: int, delimiter: int) -> np.ndarray | None:
        """Where the fields of each of the block's rows lie, as a (rows x k+1) view: field j of
        row r is [B[r, j], B[r, j+1] - 1), column 0 being one past the row's previous line
        break. None when some row has not k fields. The block ends with a line break."""
        newline = self.seg == _NL
        rows = int(np.count_nonzero(newline))
        mask = np.empty(self.size + 1, bool)
        mask[0] = True  # a separator before the first row: each field starts one past one
        np.logical_or(newline, self.seg == delimiter, out=mask[1:])
        seps = np.flatnonzero(mask)
        if len(seps) != rows * k + 1:
            return None
        # Row r's separators are seps[r*k + 1 .. r*k + k]; seps[r*k] is the previous row's line break.
        bounds = as_strided(seps, (rows, k + 1), (k * seps.itemsize, seps.itemsize), writeable=False)
        if rows and not newline[bounds[:, k] - 1].all():
            return None
        return bounds

    def short_numbers(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The numbers of fields of up to 8 digits, [s, e) element by element (columns x rows:
        several columns in one pass), and where there is none (an empty field, one of more than
        8 bytes, a byte that is no digit). The columns whose fields all have up to 4 bytes, as
        most have (times, codes, sizes), are read as 32-bit words: half the bytes to move."""
        if s.size == 0:
            return np.zeros(s.shape, np.int64), np.zeros(s.shape, bool)
        width = e - s
        short = width.max(axis=-1) <= 4
        if short.all() or not short.any():
            return self._short_numbers(s, e, width, bool(short.all()))
        values, bad = np.empty(s.shape, np.int64), np.empty(s.shape, bool)
        for rows in (short, ~short):
            values[rows], bad[rows] = self._short_numbers(s[rows], e[rows], width[rows], rows is short)
        return values, bad

    def _short_numbers(self, s: np.ndarray, e: np.ndarray, width: np.ndarray,
                       short: bool) -> tuple[np.ndarray, np.ndarray]:
        at = e - (4 if short else 8)
        early = None
        if int(at.min()) < 0:  # a field that ends in the block's first bytes: read digit by digit
            early = at < 0
            at = np.where(early, 0, at)
        if short:
            values, bad = _short32(self.words32[at], width)
        else:
            width = np.minimum(width, 9)
            word = (self.words[at] & np.take(_KEEP, width)) | np.take(_FILL, width)
            digits = word - _ZEROS
            bad = (((word + _OVER_9) | digits) & _HIGH_BITS) != 0
            values = _value_of(digits)
        if early is not None:
            values[early], bad[early] = self.numbers(s[early], e[early])
        return values, bad

    def uniform(self, s: np.ndarray, e: np.ndarray) -> bool:
        """Whether every row's [s, e) holds the bytes of the first row's (one label in the
        whole block, as in most runs), compared 8 bytes at a time."""
        if not len(s):
            return True
        first_s, first_e = int(s[0]), int(e[0])
        width = first_e - first_s
        if first_e < 8 or bool((e - s != width).any()):
            return False
        keep = _KEEP[min(width, 8)]
        if bool(((self.words[e - 8] ^ self.words[first_e - 8]) & keep).any()):
            return False
        for off in range(0, width - 8, 8):
            if bool((self.words[s + off] != self.words[first_s + off]).any()):
                return False
        return True

    def prefixed(self, s: np.ndarray, e: np.ndarray, prefix: bytes) -> np.ndarray:
        """The rows whose [s, e) starts with `prefix`'s first 8 bytes: candidates, whose
        whole text the caller reads."""
        want = np.frombuffer(prefix[:8], "<u8")[0]
        top = len(self.words) - 1
        if top < 0:
            return np.zeros(len(s), bool)
        return (e - s >= 8) & (self.words[np.minimum(s, top)] == want)

    def text(self, s: int, e: int) -> str:
        return bytes(self.seg[s:e]).decode("utf-8", "replace")

    def numbers(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The unsigned decimal number in [s, e) of every row, and the rows that hold none."""
        if len(s) == 0:
            return np.zeros(0, np.int64), np.zeros(0, bool)
        width = e - s
        top, low = int(width.max()), int(width.min())
        if 3 <= top <= 8 and int(e.min()) >= 8:
            values, bad = self._word(e, width)
        elif low == top and 9 <= top <= 16 and int(e.min()) >= 8 and int(s.max()) < len(self.words):
            values, bad = self._uniform_wide(s, e, top)  # epoch-ms time stamps: 13 digits in every row
        elif 9 <= low and top <= 16 and int(e.min()) >= 8 and int(s.max()) < len(self.words):
            low_values, low_bad = self._word(e, np.full_like(width, 8))
            high_values, high_bad = self._word_at(s, width - 8)
            values, bad = high_values * 100_000_000 + low_values, low_bad | high_bad
        else:
            values, bad = self._each_digit(s, e, width, min(top, MAX_WIDTH))
        return values, bad | (width == 0) | (width > MAX_WIDTH)

    def _uniform_wide(self, s: np.ndarray, e: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Fields of `width` (9-16) digits in every row: the last 8 as the word ending at e,
        the others as the word starting at s moved right, with masks the same for all rows.
        The leading digits of a run's time stamps change once a day: when they are the same
        in every row, they are read once."""
        low = self.words[e - 8]
        low_digits = low - _ZEROS
        bad = (((low + _OVER_9) | low_digits) & _HIGH_BITS) != 0
        values = _value_of(low_digits)
        shift = np.uint64(8 * (16 - width))
        lead = self.words[s] & (_ONES >> shift)  # the first width-8 bytes
        if bool((lead == lead[0]).all()):
            lead = lead[:1]
        high = (lead << shift) | (_ZEROS & ~(_ONES << shift))
        high_digits = high - _ZEROS
        bad |= (((high + _OVER_9) | high_digits) & _HIGH_BITS) != 0
        values += _value_of(high_digits) * 100_000_000
        return values, bad

    def _word(self, e: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fields of 1-8 digits ending at e: the word ending there, right-aligned."""
        shift = ((8 - np.clip(width, 1, 8)) * 8).astype(np.uint64)
        keep = _ONES << shift
        word = (self.words[e - 8] & keep) | (_ZEROS & ~keep)
        return _value(word), ~_all_digits(word) | (width > 8)

    def _word_at(self, s: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fields of 1-8 digits starting at s: the word starting there, moved right."""
        shift = ((8 - np.clip(width, 1, 8)) * 8).astype(np.uint64)
        word = (self.words[s] << shift) | (_ZEROS & ~(_ONES << shift))
        return _value(word), ~_all_digits(word) | (width < 1) | (width > 8)

    def _each_digit(self, s: np.ndarray, e: np.ndarray, width: np.ndarray,
                    top: int) -> tuple[np.ndarray, np.ndarray]:
        values = np.zeros(len(s), np.int64)
        bad = np.zeros(len(s), bool)
        for k in range(1, top + 1):
            digit = self.seg[np.maximum(e - k, s)] - np.uint8(48)
            digit = np.where(width >= k, digit, np.uint8(0))
            bad |= digit > 9
            values += digit * _POW10[k - 1]
        return values, bad

    def success(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`true` / `false` per row, and the rows that are neither."""
        first = self.seg[np.minimum(s, self.size - 1)]
        ok = first == ord("t")
        bad = np.where(ok, e - s != 4, (e - s != 5) | (first != ord("f")))
        return ok, bad

    def texts(self, s: np.ndarray, e: np.ndarray) -> dict[str, int]:
        """The distinct texts of [s, e) and how many rows have each, without a Python
        string per row: rows are compared as fixed-width byte keys."""
        if len(s) == 0:
            return {}
        width = int((e - s).max())
        cols = np.arange(max(width, 1))
        keys = np.where(cols < (e - s)[:, None], self.seg[np.minimum(s[:, None] + cols, self.size - 1)], 0)
        keys = np.ascontiguousarray(keys, dtype=np.uint8).view(np.dtype((np.void, keys.shape[1]))).ravel()
        # Sorted and cut where the key changes (np.unique would do the same, and import numpy.ma
        # the first time: a twentieth of a second in every process).
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        new = np.ones(len(ordered), bool)
        new[1:] = ordered[1:] != ordered[:-1]
        starts = np.flatnonzero(new)
        counts = np.diff(np.append(starts, len(ordered)))
        return {self.text(int(s[i]), int(e[i])): int(n) for i, n in zip(order[starts], counts)}


def _short32(word: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fields of 1-4 digits from the 32-bit words that end where they end; the same steps as
    for 8 digits (_value_of), at half the width."""
    word = (word & np.take(_KEEP32, width)) | np.take(_FILL32, width)
    digits = word - _ZEROS32
    bad = (((word + _OVER_9_32) | digits) & _HIGH_BITS32) != 0
    digits = digits * np.uint32(10) + (digits >> np.uint32(8))  # byte 0: the first two digits, byte 2: the last two
    values = ((digits & _LOW32) * np.uint32(1 + (100 << 16))) >> np.uint32(16)
    return values.astype(np.int64), bad


def _all_digits(word: np.ndarray) -> np.ndarray:
    return ((word + _OVER_9) | (word - _ZEROS)) & _HIGH_BITS == 0


def _value(word: np.ndarray) -> np.ndarray:
    """Eight ASCII digits, the first in the lowest byte, to their value."""
    return _value_of(word - _ZEROS)


def _value_of(v: np.ndarray) -> np.ndarray:
    """Eight digit values (bytes 0-9), the first in the lowest byte, to their number."""
    v = v * np.uint64(10) + (v >> np.uint64(8))
    v = ((v & _LOW) * np.uint64(100 + (1_000_000 << 32))
         + ((v >> np.uint64(16)) & _LOW) * np.uint64(1 + (10_000 << 32))) >> np.uint64(32)
    return v.astype(np.int64)
