"""Whole numbers out of CSV bytes for all rows at once, with numpy.

A field of up to 8 digits is read as one unaligned 64-bit word (the 8 bytes that end
where the field ends), the bytes before the field are replaced by '0' and the word is
turned into its value with three multiply-and-shift steps (the "SWAR" technique): the
same dozen array operations whatever the width. Up to 16 digits take two words. One- and
two-digit columns (elapsed ms on a fast target) are cheaper digit by digit."""
from __future__ import annotations

import numpy as np

_ZEROS = np.uint64(0x3030303030303030)  # eight '0'
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW = np.uint64(0x000000FF000000FF)
_HIGH_BITS = np.uint64(0x8080808080808080)
_OVER_9 = np.uint64(0x4646464646464646)  # 0x80 - ':' in every byte
_POW10 = 10 ** np.arange(19, dtype=np.int64)
MAX_WIDTH = 18


class Block:
    """Bytes [a, b) of `data`: `seg` byte by byte, `words` as the 64-bit word at each offset."""

    def __init__(self, data: bytes, a: int, b: int) -> None:
        self.seg = np.frombuffer(data, np.uint8, b - a, a)
        self.size = b - a
        # Offsets past size-8 have no whole word; fields there fall back to digit by digit.
        self.words = np.ndarray((max(self.size - 7, 0),), dtype="<u8", buffer=data, offset=a, strides=(1,))

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
        elif 9 <= low and top <= 16 and int(e.min()) >= 8 and int(s.max()) < len(self.words):
            low_values, low_bad = self._word(e, np.full_like(width, 8))
            high_values, high_bad = self._word_at(s, width - 8)
            values, bad = high_values * 100_000_000 + low_values, low_bad | high_bad
        else:
            values, bad = self._each_digit(s, e, width, min(top, MAX_WIDTH))
        return values, bad | (width == 0) | (width > MAX_WIDTH)

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
        _, first, counts = np.unique(keys, return_index=True, return_counts=True)
        return {self.text(int(s[i]), int(e[i])): int(n) for i, n in zip(first, counts)}


def _all_digits(word: np.ndarray) -> np.ndarray:
    return ((word + _OVER_9) | (word - _ZEROS)) & _HIGH_BITS == 0


def _value(word: np.ndarray) -> np.ndarray:
    """Eight ASCII digits, the first in the lowest byte, to their value."""
    v = word - _ZEROS
    v = v * np.uint64(10) + (v >> np.uint64(8))
    v = ((v & _LOW) * np.uint64(100 + (1_000_000 << 32))
         + ((v >> np.uint64(16)) & _LOW) * np.uint64(1 + (10_000 << 32))) >> np.uint64(32)
    return v.astype(np.int64)
